"""Errors a reader can act on: one line that names the culprit and what was expected.

Each error class carries ``_render_traceback_``, which IPython (and so Jupyter and papermill)
uses in place of the traceback, so a bad parameter shows as a single line in a notebook too.
"""


class BookError(Exception):
    """Base class: an error caused by input, shown as one line without a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class ParameterError(BookError, ValueError):
    """A chapter parameter has the wrong type or value: ``got`` is the value, or the item of it
    at fault; ``detail`` says what is wrong with it when that is not plain to see (a text's
    token count under the model's tokenizer)."""

    def __init__(self, name: str, expected: str, got: object, detail: str = ""):
        self.name, self.expected, self.got, self.detail = name, expected, got, detail
        note = f" ({' '.join(detail.split())})" if detail else ""
        super().__init__(f"parameter '{name}' expects {expected}; got {short_repr(got)}{note}")


class ModelUnavailableError(BookError, OSError):
    """A model cannot be loaded: not present offline, not a model directory, or a bad hash."""


class RemoteCodeError(BookError, PermissionError):
    """A model needs custom code and the parameters did not allow it."""


class NotApplicableError(BookError, ValueError):
    """A measurement assumes a token the model's architecture does not have ([CLS], [SEP])."""

    def __init__(self, what: str, model: str, needs: str):
        self.what, self.model, self.needs = what, model, needs
        super().__init__(f"{what} is not applicable to this architecture: {model} has no {needs}")


def short_repr(value: object, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` characters, built in bounded time and memory whatever
    the value (``reprlib``: a YAML alias bomb or a 5,000-digit integer included)."""
    import reprlib

    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = shown.maxlong = width
    shown.maxlevel = 3  # 60 characters never show more
    try:
        text = shown.repr(value)
    except ValueError:  # an int beyond Python's digit limit for str()
        text = f"an integer of {value.bit_length()} bits"
    return text if len(text) <= width else text[: width - 3] + "..."
