"""The front end: a kernel file's source -> its KernelModels (tkcheck.model).

Public interface:
  parse_source(path, text, ParseOptions) -> ParsedFile   libclang, as nvcc reads the file
  read_source(path) -> str                                the file's text (InputError if unreadable)
  ModelBuilder(parsed).build() -> [KernelModel]          one walk of the parse per kernel
  protocol_function(kind)                                 a TK template's protocol, parsed once
  ParseOptions, ParsedFile, InputError
For a whole file, `tkcheck.engine.models_of(path, options)` does parse and build in one call.
The other modules (walk_*, value_types, cexpr, ...) are the builder's parts; the closed forms of
loop-carried values it solves are `tkcheck.recurrence` (shared with the checks).
"""

from importlib import import_module as _import_module

_PUBLIC = {
    "parse_source": "parse",
    "read_source": "parse",
    "protocol_function": "parse",
    "ParseOptions": "parse",
    "ParsedFile": "parse",
    "InputError": "parse",
    "ModelBuilder": "builder",
}

__all__ = [
    "InputError",
    "ModelBuilder",
    "ParseOptions",
    "ParsedFile",
    "parse_source",
    "protocol_function",
    "read_source",
]


def __getattr__(name):
    # lazily: the builder loads libclang, and `tkcheck.frontend.parse` alone must stay light
    if name in _PUBLIC:
        return getattr(_import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
