"""jest: the program is a test file (TypeScript or JavaScript, ES modules), as SandboxFusion's runner writes it,
run by Debian's Jest 29.3 (modules under /usr/share/nodejs); passes when jest exits 0. Run offline without
watchman, in one process (``--runInBand``), CI mode (a missing snapshot fails), its transform cache under the
job's scratch; the config on the command line with SandboxFusion's Babel presets (types stripped, ``import``
made ``require``), modules resolved from /usr/share/nodejs (``NODE_PATH``)."""

import json

from languages.record import Record

NODE_MODULES = "/usr/share/nodejs"
SCRATCH = "/tmp/job"
CONFIG = {
    "rootDir": SCRATCH,
    "testEnvironment": "node",
    "cacheDirectory": f"{SCRATCH}/.jest-cache",
    "testPathIgnorePatterns": ["/node_modules/", r"/\."],
    "transform": {
        r"\.[cm]?[jt]sx?$": [
            f"{NODE_MODULES}/babel-jest",
            {
                "presets": [
                    [f"{NODE_MODULES}/@babel/preset-env", {"targets": {"node": "current"}}],
                    f"{NODE_MODULES}/@babel/preset-typescript",
                ],
                "babelrc": False,
                "configFile": False,
            },
        ]
    },
}
JEST_RUN = ["jest", "--ci", "--runInBand", "--watchman=false", "--config", json.dumps(CONFIG)]
JEST_ENV = {"NODE_PATH": f"{NODE_MODULES}:/usr/lib/nodejs", "FORCE_COLOR": "0", "CI": "true"}

RECORD = Record(
    name="jest",
    rank=25,
    tags=("jest", "typescript", "ts", "javascript", "js"),
    source="main.test.ts",
    run=JEST_RUN,
    run_as_mb=4096,
    env=JEST_ENV,
    sandboxfusion=("jest",),
    packages=("jest",),  # Jest 29.3 and its tree of node-* packages
    toolchain_doc="Jest 29.3 (a TypeScript or JavaScript test file; Babel's env and TypeScript presets)",
    served_doc="yes (stdio or `/run_code`: the suite's exit status)",
)
