"""How a ``jest`` program runs in the toolchain sandbox (verifiers/kinds/code/languages.py's ``jest`` row).

SandboxFusion's jest runner writes the program as a ``*.test.ts`` file beside its own ``node_modules``
(Jest 29 with babel-jest, Babel's env and TypeScript presets) and runs ``jest``; the run passes when
jest exits 0. Here the program is ``main.test.ts`` in the job's scratch directory and Jest is Debian's
(``jest`` 29.3, its modules under /usr/share/nodejs, installed by sandbox/image/langs.py), run as:

* offline and without watchman (``--watchman=false``: the file crawl is Node's own);
* one worker, in the jest process itself (``--runInBand``): no worker processes to fork;
* CI mode (``--ci``: a missing snapshot fails instead of being written), no colours;
* its transform cache under the job's scratch (``cacheDirectory``), wiped with the job;
* the config given on the command line (no ``package.json`` or ``babel.config.js`` in the job): the
  same Babel presets as SandboxFusion's ``babel.config.js``, by absolute path, so TypeScript's types
  are stripped and ``import`` statements become ``require``; ``@jest/globals``, lodash and the other
  Debian Node modules resolve from /usr/share/nodejs (``NODE_PATH``).
"""

from __future__ import annotations

import json

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
