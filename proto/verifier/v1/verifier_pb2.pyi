from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_CORRECT: _ClassVar[Outcome]
    OUTCOME_INCORRECT: _ClassVar[Outcome]
    OUTCOME_NO_ANSWER: _ClassVar[Outcome]
    OUTCOME_TIMEOUT: _ClassVar[Outcome]
    OUTCOME_RUNTIME_ERROR: _ClassVar[Outcome]
    OUTCOME_SANDBOX_ERROR: _ClassVar[Outcome]
    OUTCOME_COMPILE_ERROR: _ClassVar[Outcome]
    OUTCOME_BAD_REFERENCE: _ClassVar[Outcome]
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_CORRECT: Outcome
OUTCOME_INCORRECT: Outcome
OUTCOME_NO_ANSWER: Outcome
OUTCOME_TIMEOUT: Outcome
OUTCOME_RUNTIME_ERROR: Outcome
OUTCOME_SANDBOX_ERROR: Outcome
OUTCOME_COMPILE_ERROR: Outcome
OUTCOME_BAD_REFERENCE: Outcome

class VerifyRequest(_message.Message):
    __slots__ = ("verifier", "completion", "reference", "prompt", "options", "timeout_s", "id")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VERIFIER_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    verifier: str
    completion: str
    reference: str
    prompt: str
    options: _containers.ScalarMap[str, str]
    timeout_s: float
    id: str
    def __init__(self, verifier: _Optional[str] = ..., completion: _Optional[str] = ..., reference: _Optional[str] = ..., prompt: _Optional[str] = ..., options: _Optional[_Mapping[str, str]] = ..., timeout_s: _Optional[float] = ..., id: _Optional[str] = ...) -> None: ...

class StepReward(_message.Message):
    __slots__ = ("reward", "start", "end")
    REWARD_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    reward: float
    start: int
    end: int
    def __init__(self, reward: _Optional[float] = ..., start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class CaseVerdict(_message.Message):
    __slots__ = ("status", "detail", "elapsed_s")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATUS_UNSPECIFIED: _ClassVar[CaseVerdict.Status]
        STATUS_PASSED: _ClassVar[CaseVerdict.Status]
        STATUS_WRONG_ANSWER: _ClassVar[CaseVerdict.Status]
        STATUS_TIME_LIMIT: _ClassVar[CaseVerdict.Status]
        STATUS_RUNTIME_ERROR: _ClassVar[CaseVerdict.Status]
        STATUS_OUTPUT_LIMIT: _ClassVar[CaseVerdict.Status]
        STATUS_SKIPPED: _ClassVar[CaseVerdict.Status]
    STATUS_UNSPECIFIED: CaseVerdict.Status
    STATUS_PASSED: CaseVerdict.Status
    STATUS_WRONG_ANSWER: CaseVerdict.Status
    STATUS_TIME_LIMIT: CaseVerdict.Status
    STATUS_RUNTIME_ERROR: CaseVerdict.Status
    STATUS_OUTPUT_LIMIT: CaseVerdict.Status
    STATUS_SKIPPED: CaseVerdict.Status
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_S_FIELD_NUMBER: _ClassVar[int]
    status: CaseVerdict.Status
    detail: str
    elapsed_s: float
    def __init__(self, status: _Optional[_Union[CaseVerdict.Status, str]] = ..., detail: _Optional[str] = ..., elapsed_s: _Optional[float] = ...) -> None: ...

class VerifyResponse(_message.Message):
    __slots__ = ("reward", "outcome", "detail", "elapsed_s", "id", "components", "cached", "steps", "cases", "signals")
    class ComponentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    REWARD_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_S_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    CASES_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    reward: float
    outcome: Outcome
    detail: str
    elapsed_s: float
    id: str
    components: _containers.ScalarMap[str, float]
    cached: bool
    steps: _containers.RepeatedCompositeFieldContainer[StepReward]
    cases: _containers.RepeatedCompositeFieldContainer[CaseVerdict]
    signals: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, reward: _Optional[float] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., detail: _Optional[str] = ..., elapsed_s: _Optional[float] = ..., id: _Optional[str] = ..., components: _Optional[_Mapping[str, float]] = ..., cached: _Optional[bool] = ..., steps: _Optional[_Iterable[_Union[StepReward, _Mapping]]] = ..., cases: _Optional[_Iterable[_Union[CaseVerdict, _Mapping]]] = ..., signals: _Optional[_Iterable[str]] = ...) -> None: ...

class VerifyBatchRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[VerifyRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[VerifyRequest, _Mapping]]] = ...) -> None: ...

class VerifyBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[VerifyResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[VerifyResponse, _Mapping]]] = ...) -> None: ...

class ListVerifiersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VerifierInfo(_message.Message):
    __slots__ = ("name", "kind", "description", "builtin", "version", "python", "remote", "composite", "reward_model", "digest", "grader_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    BUILTIN_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_FIELD_NUMBER: _ClassVar[int]
    REWARD_MODEL_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    GRADER_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    description: str
    builtin: bool
    version: int
    python: PythonVerifier
    remote: RemoteVerifier
    composite: CompositeVerifier
    reward_model: RewardModelVerifier
    digest: str
    grader_version: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., description: _Optional[str] = ..., builtin: _Optional[bool] = ..., version: _Optional[int] = ..., python: _Optional[_Union[PythonVerifier, _Mapping]] = ..., remote: _Optional[_Union[RemoteVerifier, _Mapping]] = ..., composite: _Optional[_Union[CompositeVerifier, _Mapping]] = ..., reward_model: _Optional[_Union[RewardModelVerifier, _Mapping]] = ..., digest: _Optional[str] = ..., grader_version: _Optional[str] = ...) -> None: ...

class ListVerifiersResponse(_message.Message):
    __slots__ = ("verifiers",)
    VERIFIERS_FIELD_NUMBER: _ClassVar[int]
    verifiers: _containers.RepeatedCompositeFieldContainer[VerifierInfo]
    def __init__(self, verifiers: _Optional[_Iterable[_Union[VerifierInfo, _Mapping]]] = ...) -> None: ...

class GetVerifierRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RegisterVerifierRequest(_message.Message):
    __slots__ = ("name", "description", "python", "remote", "composite", "reward_model", "replace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_FIELD_NUMBER: _ClassVar[int]
    REWARD_MODEL_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    python: PythonVerifier
    remote: RemoteVerifier
    composite: CompositeVerifier
    reward_model: RewardModelVerifier
    replace: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., python: _Optional[_Union[PythonVerifier, _Mapping]] = ..., remote: _Optional[_Union[RemoteVerifier, _Mapping]] = ..., composite: _Optional[_Union[CompositeVerifier, _Mapping]] = ..., reward_model: _Optional[_Union[RewardModelVerifier, _Mapping]] = ..., replace: _Optional[bool] = ...) -> None: ...

class PythonVerifier(_message.Message):
    __slots__ = ("source", "entrypoint", "example_completion", "example_reference")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ENTRYPOINT_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_COMPLETION_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    source: str
    entrypoint: str
    example_completion: str
    example_reference: str
    def __init__(self, source: _Optional[str] = ..., entrypoint: _Optional[str] = ..., example_completion: _Optional[str] = ..., example_reference: _Optional[str] = ...) -> None: ...

class RemoteVerifier(_message.Message):
    __slots__ = ("target", "verifier")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_FIELD_NUMBER: _ClassVar[int]
    target: str
    verifier: str
    def __init__(self, target: _Optional[str] = ..., verifier: _Optional[str] = ...) -> None: ...

class CompositeVerifier(_message.Message):
    __slots__ = ("components",)
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    components: _containers.RepeatedCompositeFieldContainer[Component]
    def __init__(self, components: _Optional[_Iterable[_Union[Component, _Mapping]]] = ...) -> None: ...

class Component(_message.Message):
    __slots__ = ("verifier", "weight", "options")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VERIFIER_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    verifier: str
    weight: float
    options: _containers.ScalarMap[str, str]
    def __init__(self, verifier: _Optional[str] = ..., weight: _Optional[float] = ..., options: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RewardModelVerifier(_message.Message):
    __slots__ = ("path", "mapping", "low", "high", "max_length")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MAPPING_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    path: str
    mapping: str
    low: float
    high: float
    max_length: int
    def __init__(self, path: _Optional[str] = ..., mapping: _Optional[str] = ..., low: _Optional[float] = ..., high: _Optional[float] = ..., max_length: _Optional[int] = ...) -> None: ...

class UnregisterVerifierRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UnregisterVerifierResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SessionLimits(_message.Message):
    __slots__ = ("cpu_s", "timeout_s", "memory_mb", "output_bytes", "nproc", "nofile", "fsize_mb")
    CPU_S_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    NPROC_FIELD_NUMBER: _ClassVar[int]
    NOFILE_FIELD_NUMBER: _ClassVar[int]
    FSIZE_MB_FIELD_NUMBER: _ClassVar[int]
    cpu_s: int
    timeout_s: float
    memory_mb: int
    output_bytes: int
    nproc: int
    nofile: int
    fsize_mb: int
    def __init__(self, cpu_s: _Optional[int] = ..., timeout_s: _Optional[float] = ..., memory_mb: _Optional[int] = ..., output_bytes: _Optional[int] = ..., nproc: _Optional[int] = ..., nofile: _Optional[int] = ..., fsize_mb: _Optional[int] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("kind", "limits", "files", "ttl_s")
    class FilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    KIND_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    TTL_S_FIELD_NUMBER: _ClassVar[int]
    kind: str
    limits: SessionLimits
    files: _containers.ScalarMap[str, bytes]
    ttl_s: float
    def __init__(self, kind: _Optional[str] = ..., limits: _Optional[_Union[SessionLimits, _Mapping]] = ..., files: _Optional[_Mapping[str, bytes]] = ..., ttl_s: _Optional[float] = ...) -> None: ...

class SessionInfo(_message.Message):
    __slots__ = ("id", "kind", "created", "last_used", "ttl_s", "parent", "isolation", "limits")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_FIELD_NUMBER: _ClassVar[int]
    TTL_S_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    created: float
    last_used: float
    ttl_s: float
    parent: str
    isolation: str
    limits: SessionLimits
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., created: _Optional[float] = ..., last_used: _Optional[float] = ..., ttl_s: _Optional[float] = ..., parent: _Optional[str] = ..., isolation: _Optional[str] = ..., limits: _Optional[_Union[SessionLimits, _Mapping]] = ...) -> None: ...

class ExecRequest(_message.Message):
    __slots__ = ("session_id", "code", "timeout_s", "cpu_s")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    CPU_S_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    code: str
    timeout_s: float
    cpu_s: int
    def __init__(self, session_id: _Optional[str] = ..., code: _Optional[str] = ..., timeout_s: _Optional[float] = ..., cpu_s: _Optional[int] = ...) -> None: ...

class ExecResponse(_message.Message):
    __slots__ = ("status", "stdout", "stderr", "value", "error", "exit_code", "stdout_truncated", "stderr_truncated", "cpu_s", "wall_s", "ended")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STDERR_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    CPU_S_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    status: str
    stdout: str
    stderr: str
    value: str
    error: str
    exit_code: int
    stdout_truncated: bool
    stderr_truncated: bool
    cpu_s: float
    wall_s: float
    ended: str
    def __init__(self, status: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., value: _Optional[str] = ..., error: _Optional[str] = ..., exit_code: _Optional[int] = ..., stdout_truncated: _Optional[bool] = ..., stderr_truncated: _Optional[bool] = ..., cpu_s: _Optional[float] = ..., wall_s: _Optional[float] = ..., ended: _Optional[str] = ...) -> None: ...

class ForkSessionRequest(_message.Message):
    __slots__ = ("session_id", "n")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    n: int
    def __init__(self, session_id: _Optional[str] = ..., n: _Optional[int] = ...) -> None: ...

class ForkSessionResponse(_message.Message):
    __slots__ = ("sessions",)
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions",)
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ...) -> None: ...

class GradeSessionRequest(_message.Message):
    __slots__ = ("session_id", "verifier", "reference", "prompt", "options", "timeout_s", "id")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    verifier: str
    reference: str
    prompt: str
    options: _containers.ScalarMap[str, str]
    timeout_s: float
    id: str
    def __init__(self, session_id: _Optional[str] = ..., verifier: _Optional[str] = ..., reference: _Optional[str] = ..., prompt: _Optional[str] = ..., options: _Optional[_Mapping[str, str]] = ..., timeout_s: _Optional[float] = ..., id: _Optional[str] = ...) -> None: ...
