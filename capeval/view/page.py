"""The viewer's one HTML file, and its data files.

The page is self-contained: its style and script are inlined from the
package's `assets/`, and a Content-Security-Policy allows exactly those two
(by hash) plus the page's own `data/*.js` files, and nothing remote. Each
page's data is a script `data/<key>.js` calling `capevalData(key, data)`:
unlike a JSON fetch, that loads from file:// too, so an export opens from a
CI artifact without a server.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from functools import cache
from importlib import resources
from typing import Any

ASSETS = "assets"


def _asset(name: str) -> str:
    return resources.files("capeval.view").joinpath(ASSETS, name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def content_security_policy(script: str, style: str) -> str:
    """Only the inlined script and style, the page's own data scripts, nothing remote."""
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' file: {_sha256(script)}",
            f"style-src {_sha256(style)}",
            "img-src 'self' data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )


@cache
def html() -> str:
    """The viewer page, style and script inlined."""
    template = _asset("viewer.html")
    script = _asset("viewer.js")
    style = _asset("viewer.css")
    for name, text in (("script", script), ("style", style)):
        if f"</{name}" in text.lower():
            raise ValueError(f"the viewer's {name} must not close its own element")
    return (
        template.replace("@CSP@", content_security_policy(script, style))
        .replace("@CSS@", style)
        .replace("@JS@", script)
    )


def data_script(key: str, data: Any) -> str:
    """A page's data as the script the page loads: `capevalData("key", {...});`.

    JSON is a JavaScript expression; written ASCII-only, with `<`, `>` and
    `&` escaped, it holds nothing a browser could read as markup or as the end
    of a script, whatever the rows and transcripts contain.
    """
    payload = json.dumps(
        _finite(data), ensure_ascii=True, separators=(",", ":"), allow_nan=False, default=str
    )
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"capevalData({json.dumps(key)},{payload});\n"


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinity as null: JSON has neither."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
