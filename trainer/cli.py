"""The trainer's one configuration path: a YAML file, then ``--section.key value`` overrides, validated
once by the entry point's pydantic model. ``--help`` is generated from the models' field descriptions.

Used by every trainer entry point: ``python -m trainer.train`` (trainer.config.GRPOConfig),
``trainer.pipelines.make_train`` (PipelineConfig), ``trainer.pipelines.r1`` (R1Config) and ``trainer.evaluation.evaluate`` (EvalArgs).
The warm start's settings are a section of the pipeline's models (``--warmstart.steps 200``, r1's
``--cold_start.lr 1e-3``), parsed here like every other section.

The command line, token by token:

- ``--config FILE``: the YAML file (a mapping of field: value; nested sections are nested mappings);
- ``--a.b.c value`` or ``--a.b.c=value``: sets field ``c`` of section ``b`` of section ``a``. Dashes in
  names are underscores (``--max-new-tokens`` = ``--max_new_tokens``). The value is parsed as YAML
  (``0`` is a number, ``[1, 2]`` a list, ``null`` is None), except for text fields, which take it as
  written (``--name 2024`` is the text "2024");
- a boolean field may be given alone (``--fresh``: true) or negated (``--no-progress``: false), or
  with a value (``--fresh false``);
- aliases: an entry point may map a flag onto a field (the pipeline's ``--verifier`` sets
  ``grpo.verifier``).

For example, with trainer.config.GRPOConfig::

    load(GRPOConfig, ["--config", "c.yaml", "--lora.r", "8", "--beta=0", "--no-share-prefix"])
    # c.yaml's values, then lora.r = 8, beta = 0, share_prefix = False; validated once
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from trainer.errors import ConfigError

M = TypeVar("M", bound=BaseModel)
HELP = ("-h", "--help")
_BOOL_WORDS = {"true", "false", "yes", "no", "on", "off", "t", "f", "y", "n", "1", "0"}  # what pydantic reads as a bool


# ---------------------------------------------------------------------------------------------
# field types
# ---------------------------------------------------------------------------------------------


def _members(ann: Any) -> tuple[Any, ...]:
    """The alternatives of a union (``X | None`` -> (X, NoneType)), else (ann,)."""
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return typing.get_args(ann)
    return (ann,)


def _submodel(ann: Any) -> type[BaseModel] | None:
    for t in _members(ann):
        if isinstance(t, type) and issubclass(t, BaseModel):
            return t
    return None


def field_at(model: type[BaseModel], path: Sequence[str]) -> FieldInfo | None:
    """The field that ``--a.b.c`` names in ``model`` (None: no such field)."""
    node: type[BaseModel] | None = model
    info = None
    for part in path:
        if node is None or part not in node.model_fields:
            return None
        info = node.model_fields[part]
        node = _submodel(info.annotation)
    return info


def _is_bool(info: FieldInfo | None) -> bool:
    return info is not None and bool in _members(info.annotation)


def _is_text(info: FieldInfo | None) -> bool:
    """A field that holds text only (str, str | None, a Literal of strings): values are taken verbatim."""
    if info is None:
        return False
    kinds = [t for t in _members(info.annotation) if t is not type(None)]
    for t in kinds:
        if typing.get_origin(t) is Literal:
            if not all(isinstance(v, str) for v in typing.get_args(t)):
                return False
        elif t is not str:
            return False
    return bool(kinds)


def _value(info: FieldInfo | None, text: str) -> Any:
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        parsed = text
    if parsed is None and info is not None and type(None) in _members(info.annotation):
        return None
    return text if _is_text(info) else parsed


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------


def parse_argv(
    model: type[BaseModel], argv: Sequence[str], aliases: Mapping[str, str] | None = None
) -> tuple[str | None, dict[str, Any]]:
    """``argv`` -> (the ``--config`` file or None, the overrides as a nested mapping)."""
    aliases = dict(aliases or {})
    config: str | None = None
    over: dict[str, Any] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("--") or token == "--":
            raise ConfigError(f"expected --key value, got {token!r} (see --help)")
        key, eq, inline = token[2:].partition("=")
        key = aliases.get(key, aliases.get(key.replace("_", "-"), key)).replace("-", "_")
        path = key.split(".")
        info = field_at(model, path)
        if info is None and path[-1].startswith("no_") and _is_bool(field_at(model, [*path[:-1], path[-1][3:]])):
            if eq:
                raise ConfigError(f"--{token[2:]}: a negated flag takes no value")
            _put(over, [*path[:-1], path[-1][3:]], False)
            continue
        if eq:
            text = inline
        elif _is_bool(info) and (i == len(args) or str(args[i]).lower() not in _BOOL_WORDS):
            _put(over, path, True)
            continue
        elif i < len(args):
            text, i = args[i], i + 1
        else:
            raise ConfigError(f"{token} needs a value (see --help)")
        if key == "config":
            config = text
        else:
            _put(over, path, _value(info, text))
    return config, over


def _put(node: dict[str, Any], path: list[str], value: Any) -> None:
    *parents, leaf = path
    for p in parents:
        child = node.setdefault(p, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--{'.'.join(path)}: {p} was given a value, so it has no field {leaf}")
        node = child
    node[leaf] = value


def merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``, section by section (nested mappings merge, everything else replaces)."""
    for k, v in over.items():
        base[k] = merge(dict(base.get(k) or {}), v) if isinstance(v, Mapping) else v
    return base


# ---------------------------------------------------------------------------------------------
# the YAML file and validation
# ---------------------------------------------------------------------------------------------


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from ``path``; a missing file or anything but a mapping is a ConfigError."""
    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read config file {path}: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of field: value")
    return raw


def build(model: type[M], raw: Mapping[str, Any], where: str = "") -> M:
    """Validate once; a ValidationError becomes a ConfigError naming each bad field and the file."""
    try:
        return model.model_validate(dict(raw))
    except ValidationError as e:
        what = (model.__doc__ or model.__name__).strip().splitlines()[0].rstrip(".")
        raise ConfigError(f"invalid {model.__name__} ({what}){where}:\n{e}") from None


def load(
    model: type[M],
    argv: Sequence[str] | None = None,
    *,
    default_config: str | Path | None = None,
    aliases: Mapping[str, str] | None = None,
    section: str | None = None,
) -> M:
    """The one way a trainer entry point reads its configuration: ``--config FILE`` (else
    ``default_config``), then the other flags on top, validated by ``model``. ``section``: a file may
    nest the model's fields under this key (a pipeline config read by the trainer: ``grpo:``)."""
    path, over = parse_argv(model, argv or [], aliases)
    path = path or (str(default_config) if default_config else None)
    raw = read_yaml(path) if path else {}
    if section and isinstance(raw.get(section), dict):
        raw = raw[section]
    where = (f" in {path}" if not over else f" ({path} with the command line's overrides)") if path else ""
    return build(model, merge(raw, over), where)


# ---------------------------------------------------------------------------------------------
# --help
# ---------------------------------------------------------------------------------------------


def wants_help(argv: Sequence[str]) -> bool:
    return any(a in HELP for a in argv)


def _type_name(ann: Any) -> str:
    if typing.get_origin(ann) is Literal:
        return "|".join(str(v) for v in typing.get_args(ann))
    if ann is type(None):
        return "None"
    if isinstance(ann, type):
        return ann.__name__
    return str(ann).replace("typing.", "")


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        return repr(info.default_factory())
    return "" if info.default is PydanticUndefined else repr(info.default)


def field_lines(model: type[BaseModel], prefix: str = "") -> list[str]:
    """One line per field, sections expanded: ``--a.b TYPE  description (default: X)``."""
    lines: list[str] = []
    for name, info in model.model_fields.items():
        flag = f"--{prefix}{name}"
        sub = _submodel(info.annotation)
        if sub is not None:
            doc = info.description or ((sub.__doc__ or "").strip().splitlines() or [""])[0]
            lines.append(f"{flag}.*  {doc}".rstrip())
            lines += ["  " + x for x in field_lines(sub, f"{prefix}{name}.")]
            continue
        kind = " | ".join(_type_name(t) for t in _members(info.annotation))
        lines.append(f"{flag} {kind}  {info.description or ''} (default: {_default(info)})")
    return lines


def help_text(model: type[BaseModel], doc: str | None, aliases: Mapping[str, str] | None = None) -> str:
    """The usage text of an entry point: its docstring, then every field of ``model``."""
    out = [(doc or "").strip(), "", "options (--config FILE: a YAML file of the same fields; flags override it;",
           "- and _ are the same in names; a boolean flag alone is true, --no-<flag> false):"]  # fmt: skip
    out += ["  " + x for x in field_lines(model)]
    if aliases:
        out += ["aliases:"] + [f"  --{a} = --{f}" for a, f in aliases.items()]
    return "\n".join(out)
