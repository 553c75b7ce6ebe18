"""Paths and flags several records share: the JVM's (Java, JUnit, Scala, Kotlin), Go's, Kotlin's runtime as the
toolchain image lays it out (sandbox/image/langs.py installs it there)."""

from __future__ import annotations

JVM = ["-XX:+UseSerialGC", "-XX:-UseCompressedClassPointers", "-XX:ReservedCodeCacheSize=64m"]
JUNIT = "/usr/share/java/junit-platform-console-standalone.jar"
TUPLES = "/usr/share/java/javatuples.jar"  # libjavatuples-java: org.javatuples for Java, JUnit and Kotlin
KOTLINC = ["-J-Xmx512m", "-J-XX:TieredStopAtLevel=1", *(f"-J{f}" for f in JVM)]
KOTLIN_LIB = "/usr/share/kotlin/kotlinc/lib"
# what a compiled Kotlin program or script needs on its classpath
KOTLIN_RUNTIME = [
    f"{KOTLIN_LIB}/{j}.jar"
    for j in ("kotlin-stdlib", "kotlin-stdlib-jdk7", "kotlin-stdlib-jdk8", "kotlin-script-runtime")
]
KOTLIN_SCRIPT_DIR = "/usr/lib/rlvr/kotlin"  # KotlinScript.class (sandbox/image/KotlinScript.java)
KOTLIN_CP = ":".join([*KOTLIN_RUNTIME, TUPLES])
GO_WARM_CACHE = "/usr/lib/rlvr/gocache"  # testify precompiled by the image build, for go_test
GO_ENV = {
    "GO111MODULE": "off",
    "CGO_ENABLED": "0",
    "GOCACHE": "/tmp/job/.gocache",
    "GOPATH": "/tmp/job/go:/usr/share/gocode",
}
