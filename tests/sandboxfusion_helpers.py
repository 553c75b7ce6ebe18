"""verl's reading of a SandboxFusion ``/run_code`` reply, for the tests that speak SandboxFusion's shape
(verl/utils/reward_score/sandbox_fusion/utils.py, ``_process_single_case``; re-stated here, verl is not
installed)."""

from __future__ import annotations


def verl_result(body: dict, expected: str) -> bool | int:
    """verl's classification of one reply (True, False, -1 sandbox, -2 runtime, -3 timeout, -4 compile)."""
    comp, run_ = body.get("compile_result"), body.get("run_result")
    if body["status"] == "SandboxError":
        return -1
    if body["status"] == "Failed":
        if comp and (comp["status"] in ("Error", "TimeLimitExceeded") or comp["return_code"] != 0):
            return -4
        if run_ and run_["status"] == "TimeLimitExceeded":
            return -3
        if run_ and (run_["status"] == "Error" or run_["return_code"] != 0):
            return -2
        return -1
    if run_ and run_["status"] == "Finished":
        return (run_["stdout"] or "").rstrip("\n") == expected.rstrip("\n")
    return -1
