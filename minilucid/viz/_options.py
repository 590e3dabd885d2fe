"""Settings every picture reads when it is drawn: type size and fit for a projector."""

import contextlib

_SETTINGS = {"presentation": False}
PRESENTATION_SCALE = 1.45  # type 45 % larger


def set_options(*, presentation: bool | None = None) -> None:
    """Change how the pictures made from now on are drawn.

    presentation=True: larger type, and pictures fitted to the notebook area that JupyterLab's
    presentation mode leaves on a 1488x900 or a 1920x1080 screen, width and height (a tall
    graph is laid out left to right, or compact, first), for a projector.
    presentation=False: notebook pictures at their natural size.
    """
    if presentation is not None:
        _SETTINGS["presentation"] = bool(presentation)


def get_options() -> dict:
    """The current settings, as set_options takes them."""
    return dict(_SETTINGS)


@contextlib.contextmanager
def options(*, presentation: bool | None = None):
    """Settings for the pictures made inside a `with` block; the old ones come back after it.

    with viz.options(presentation=True):
        picture = viz.draw_backward(loss)  # drawn for a projector, wherever it is shown
    """
    saved = get_options()
    set_options(presentation=presentation)
    try:
        yield get_options()
    finally:
        set_options(**saved)


def _scale() -> float:
    return PRESENTATION_SCALE if _SETTINGS["presentation"] else 1.0
