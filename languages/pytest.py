"""pytest: a test file run by pytest 7.2 in the toolchain image; passes on its exit status."""

from languages.record import Record

RECORD = Record(
    name="pytest",
    rank=21,
    tags=("pytest", "python", "py"),
    source="test_main.py",
    run=["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_main.py"],
    sandboxfusion=("pytest",),
    packages=("python3-pytest",),
    toolchain_doc="pytest 7.2",
    served_doc="yes (stdio or `/run_code`: the suite's exit status)",
)
