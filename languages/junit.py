"""junit: a JUnit 5 test class, run by the console launcher; passes on its exit status."""

from languages.common import JUNIT, JVM, TUPLES
from languages.java import for_source
from languages.record import Record

RECORD = Record(
    name="junit",
    rank=20,
    tags=("junit", "java"),
    source="Main.java",
    compile=[
        "javac",
        "-encoding",
        "UTF-8",
        "-J-Xmx512m",
        *(f"-J{f}" for f in JVM),
        "-cp",
        f".:{JUNIT}:{TUPLES}",
        "Main.java",
    ],
    run=[
        "java",
        "-ea",
        "-Xmx512m",
        *JVM,
        "-jar",
        JUNIT,
        "--disable-banner",
        "--class-path",
        f".:{TUPLES}",
        "--scan-class-path",
    ],
    run_as_mb=2048,
    sandboxfusion=("junit",),
    shows_compile=True,
    packages=("junit5",),
    for_source=for_source,
    toolchain_doc="JUnit 5.9 console launcher",
    served_doc="yes (stdio or `/run_code`: the suite's exit status)",
)
