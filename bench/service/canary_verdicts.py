"""Every canary (the adversarial batteries' known-bad completions) and its control, graded by a real server of the
tree first on the path: one line each (kind, family, name, reward, outcome, control reward, control outcome), so
two trees' verdicts can be diffed (issue 39: "the adversarial batteries give identical verdicts").

    cd <tree> && PYTHONPATH=$PWD <checkout>/.venv/bin/python <checkout>/bench/service/canary_verdicts.py > <tree>.tsv
    diff a.tsv b.tsv
"""

from verifiers.canaries import grade_with_client, load_canaries, run_canaries
from verifiers.client import VerifierClient
from verifiers.launch import LocalServer


def main() -> None:
    with LocalServer(pool_size=2) as srv, VerifierClient(srv.target) as client:
        for kind, verifier in (("math", "math"), ("code", "code"), ("format", "think_format")):
            report = run_canaries(grade_with_client(client, verifier), load_canaries([kind]))
            for r in report.results:
                c = r.canary
                print(
                    f"{kind}\t{c.family}\t{c.name}\t{r.reward:g}\t{r.outcome}\t{r.control_reward:g}\t{r.control_outcome}"
                )


if __name__ == "__main__":
    main()
