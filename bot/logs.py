"""Logging set-up: readable text by default, one JSON object per line with ``json``; no
confirmation code in any line, whatever logger wrote it."""

from __future__ import annotations

import json
import logging
import re
import sys
import time

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}

# A confirmation code in every form it travels in, as the chat SDKs log their traffic at debug
# level: the plan's line or a typed confirm ("confirm K7Q2XF3M", "confirm+K7Q2XF3M" in a
# form body), the Slack button's value ({"code": "K7Q2XF3M"}, JSON in JSON, URL-encoded),
# Discord's button IDs ("relbot:confirm:3.14.1:K7Q2XF3M") and its slash command's option
# ({"name": "confirm", "type": 3, "value": "K7Q2XF3M"}).
_SEP = r"(?:\s|\+|%20|\\[nt])+"  # a space, as typed, form-encoded or JSON-escaped
_QUOTE = r"(?:\\*[\"']|%22|%27)"  # a quote, perhaps escaped (JSON in JSON) or URL-encoded
_COLON = r"\s*(?::|%3A)\s*"
_CODE = r"[A-Za-z0-9]{6,12}(?![A-Za-z0-9])"
CODE_PATTERNS = (
    re.compile(rf"(?i)(\bconfirm{_SEP}){_CODE}"),
    re.compile(rf"(?i)({_QUOTE}code{_QUOTE}{_COLON}{_QUOTE}){_CODE}"),
    re.compile(rf"(?i)(relbot(?::|%3A)(?:publish|confirm)(?::|%3A)[^:%\s\"'\\]+(?::|%3A)){_CODE}"),
    re.compile(
        rf"(?i)({_QUOTE}confirm{_QUOTE}[^{{}}]{{0,80}}?{_QUOTE}value{_QUOTE}{_COLON}{_QUOTE}){_CODE}"
    ),
)
REDACTED = "<code>"


def redact_codes(text: str) -> str:
    """``text`` with every confirmation code replaced by ``<code>``."""
    for pattern in CODE_PATTERNS:
        text = pattern.sub(rf"\g<1>{REDACTED}", text)
    return text


class CodeFilter(logging.Filter):
    """Rewrites a record so that no confirmation code reaches a log line: slack_sdk and
    discord.py log whole requests and gateway events at debug level, the RM's private plan
    and typed confirmation included. On the handler, so it sees every logger's records."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_codes(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None:
            # The traceback's text is formatted later from the exception: format it now.
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_info, record.exc_text = None, redact_codes(text)
        return True


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", ...extra}``; exceptions as ``exc``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(CodeFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=getattr(logging, level.upper()), handlers=[handler], force=True)
    # paramiko's transport thread logs a connection it gave up on (a server that sends no
    # banner) as some twenty ERROR lines of traceback, while the bot says the same in one
    # sentence per attempt: its own lines are kept for the debug level.
    paramiko = logging.getLogger("paramiko")
    paramiko.setLevel(logging.NOTSET if level.upper() == "DEBUG" else logging.CRITICAL)
