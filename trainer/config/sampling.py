"""The sampling settings, defined once for every config that samples.

Three models sample and name the settings as their users know them: GRPO's rollouts
(``GRPOConfig.temperature``, ``top_p``: ``--temperature``, ``grpo.temperature`` in a pipeline),
rejection sampling in ``make r1`` (``RejectionSection.temperature``: ``--rejection.temperature``) and
``make eval`` with K > 1 (``EvalArgs.temperature``, ``top_p``). Each field is declared with the type and
default below; its description says when the setting applies.

- temperature T: each next token is drawn from softmax(logits / T). T = 1 is the model's own
  distribution; T must be > 0. Greedy decoding is not a temperature but a separate choice
  (``do_sample=False``: make eval's K = 1, the held-out greedy figures).
- top_p p: nucleus sampling, drawing only from the smallest set of tokens whose probabilities add up to p;
  0 < p <= 1, and p = 1 keeps every token.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Temperature = Annotated[float, Field(gt=0)]
TopP = Annotated[float, Field(gt=0, le=1)]
TEMPERATURE = 1.0  # the default everywhere: the model's own distribution
TOP_P = 1.0  # the default everywhere: no nucleus cut
