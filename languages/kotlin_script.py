"""A Kotlin script: compiled once to the class ``Main``, which the image's ``KotlinScript`` launcher runs (per case
only the JVM starts, not the compiler; Kotlin 1.3's own runner cannot run scripts)."""

from languages.common import JVM, KOTLIN_CP, KOTLIN_SCRIPT_DIR, KOTLINC, TUPLES
from languages.record import Record

RECORD = Record(
    name="kotlin_script",
    rank=23,
    tags=("kotlin_script", "kts", "kotlin"),
    source="main.kts",
    compile=["kotlinc", *KOTLINC, "-cp", TUPLES, "main.kts", "-d", "."],
    run=[
        "java",
        "-ea",
        "-Xmx512m",
        "-XX:MaxMetaspaceSize=256m",
        *JVM,
        "-cp",
        f".:{KOTLIN_SCRIPT_DIR}:{KOTLIN_CP}",
        "KotlinScript",
        "Main",
    ],
    run_as_mb=2048,
    aliases=("kts",),
    sandboxfusion=("kotlin_script",),
    toolchain_doc="Kotlin 1.3.31 script, compiled once to a class",
    served_doc="yes (stdio or `/run_code`)",
)
