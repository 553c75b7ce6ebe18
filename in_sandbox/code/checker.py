"""The checker job of stdio mode (``judge=checker``; verifiers/kinds/code/judges.py): the problem's own checker
program, a Python script that reads input.txt, output.txt (the candidate's) and answer.txt (the expected) from
its arguments and exits 0 for a correct output, run after the candidate's job has ended.
"""

import os
import sys

from in_sandbox.jobs import CHECKER


def main():
    q = CHECKER.loads(sys.stdin.read())
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    for name in ("input", "output", "answer"):
        with open(name + ".txt", "w") as f:
            f.write(q[name])
    sys.argv = ["checker.py", "input.txt", "output.txt", "answer.txt"]
    src = q.pop("checker")
    q = None
    try:
        exec(compile(src, "checker.py", "exec"), {"__name__": "__main__"})
    except SystemExit:
        raise
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stdout.flush()
        os._exit(3)
