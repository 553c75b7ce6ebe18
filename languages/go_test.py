"""go_test: ``go test`` of a test file, passing on its exit status; testify comes precompiled in the image's
build cache (``GO_WARM_CACHE``), copied into the job's own first (``go test`` compiles imports in the run)."""

from languages.common import GO_ENV, GO_WARM_CACHE
from languages.record import Record

RECORD = Record(
    name="go_test",
    rank=19,
    tags=("go_test", "go"),
    source="main_test.go",
    run=["sh", "-c", f"cp -r {GO_WARM_CACHE} /tmp/job/.gocache 2>/dev/null; exec go test main_test.go"],
    run_as_mb=4096,
    env=GO_ENV,
    sandboxfusion=("go_test",),
    packages=("golang-github-stretchr-testify-dev",),  # GOPATH /usr/share/gocode
    toolchain_doc="`go test` + testify 1.8",
    served_doc="yes (stdio or `/run_code`: the suite's exit status)",
)
