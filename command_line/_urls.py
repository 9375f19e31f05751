"""URLs in messages: never the credentials a URL carries.

A tracking URI, an S3 endpoint or an artifacts destination may carry user info (``http://KEY:SECRET@host:port``),
and MLflow's, requests' and botocore's errors repeat the URL they used whole. Every message that names a URL, or
quotes such an error, goes through :func:`without_user_info`; a server that cannot be reached is said as such by
:func:`unreachable` (MLflow labels it "model not found" otherwise).
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["unreachable", "without_user_info"]

#: ``scheme://`` followed by the user info of the URL (up to its last ``@`` before the host).
_USER_INFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s/?#'\"<>]*)@")
#: Azure's ``wasbs://<container>@<account>.blob.core.windows.net``: the part before ``@`` names a container.
_CONTAINER_SCHEMES = ("wasb://", "wasbs://", "abfs://", "abfss://")
_REQUESTS_FAILURES = ("ConnectionError", "Timeout")  # requests.exceptions: refused, unknown host, timed out
_BOTOCORE_FAILURES = ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError")
_SQLALCHEMY = "sqlalchemy"  # MLflow's database stores (sqlite://, postgresql://, mysql://, mssql://)
_SQLALCHEMY_FAILURES = ("OperationalError", "InterfaceError")  # sqlalchemy.exc: refused, unknown host, no such file
#: The distribution to install for a driver module SQLAlchemy could not import (others: the module's name).
_DRIVER_DISTRIBUTIONS = {
    "psycopg": "'psycopg[binary]'",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "mysql": "mysql-connector-python",
}
_MLFLOW_URL = re.compile(r"API request to (?P<url>\S+) failed")
_MLFLOW_API = re.compile(r"/(ajax-)?api/\d")  # MLflow's REST endpoints: <server>/api/2.0/mlflow/…
_OS_REASON = re.compile(r"\[Errno -?\d+\] (?P<reason>[^\"'()\[\]]+)")


def without_user_info(text: str) -> str:
    """``text`` with the user info (``user:password@``) of every URL in it removed.

    ``http://KEY:SECRET@host:5000/api`` becomes ``http://host:5000/api``, a URL alone or quoted inside an error's
    text. An Azure container (``wasbs://container@account…``) stays: it names no credential.
    """

    def strip(match: re.Match[str]) -> str:
        if match["scheme"].lower() in _CONTAINER_SCHEMES and ":" not in match["user"]:
            return match[0]
        return match["scheme"]

    return _USER_INFO.sub(strip, str(text))


def unreachable(error: BaseException, *, reading: str | None = None) -> str | None:
    """``cannot reach the tracking server http://host:port (Connection refused): check …`` when ``error`` (or an
    error it was raised from) is a failure to connect to MLflow's server, its database (a driver that is not
    installed included) or an S3 endpoint; ``None`` otherwise.

    No user info is in it. ``reading``: what was being read, said after the server (``to read <reading>``).
    """
    what = f" to read {reading}" if reading else ""
    for cause in _chain(error):
        names = {cls.__name__ for cls in type(cause).__mro__}
        module = type(cause).__module__
        if module.startswith("requests") and names.intersection(_REQUESTS_FAILURES):
            server = _tracking_server(cause, error)
            return (
                f"cannot reach the tracking server {server}{what} ({_reason(cause)}): check --tracking-uri "
                "(or MLFLOW_TRACKING_URI) and that the server is running"
            )
        if isinstance(cause, ImportError) and _raised_in(cause, _SQLALCHEMY):
            driver = cause.name or "its driver"
            return (
                f"the tracking store's database driver {driver} is not installed here (SQLAlchemy imports it for "
                f"--tracking-uri or MLFLOW_TRACKING_URI): pip install {_DRIVER_DISTRIBUTIONS.get(driver, driver)}, "
                "or name an installed driver in the URI (postgresql+psycopg2://…, mysql+pymysql://…)"
            )
        if module.startswith(_SQLALCHEMY) and names.intersection(_SQLALCHEMY_FAILURES):
            reason = " ".join(str(getattr(cause, "orig", None) or cause).split()).split(" (Background on")[0]
            return (
                f"cannot open the tracking store's database{what} ({without_user_info(reason)[:300]}): check "
                "--tracking-uri (or MLFLOW_TRACKING_URI) and that the database server is running"
            )
        if module.startswith("botocore") and names.intersection(_BOTOCORE_FAILURES):
            endpoint = _origin(str(getattr(cause, "kwargs", {}).get("endpoint_url", ""))) or "of AWS"
            return (
                f"cannot reach the S3 endpoint {endpoint}{what} ({_reason(cause)}): check MLFLOW_S3_ENDPOINT_URL "
                "(the S3-compatible server's URL) and that the server is running"
            )
    return None


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and the errors it was raised from or while handling, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not other for other in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _raised_in(error: BaseException, package: str) -> bool:
    """Whether a frame of ``error``'s traceback runs code of ``package`` (its files' paths name it)."""
    traceback = error.__traceback__
    while traceback is not None:
        if f"/{package}/" in traceback.tb_frame.f_code.co_filename.replace("\\", "/"):
            return True
        traceback = traceback.tb_next
    return False


def _tracking_server(failure: BaseException, error: BaseException) -> str:
    """The server MLflow asked: the failed request's URL up to MLflow's ``/api/…`` path, without user info."""
    request = getattr(failure, "request", None)
    url = str(getattr(request, "url", "") or "")
    if not url:
        found = _MLFLOW_URL.search(str(error))
        url = found["url"] if found else ""
    url = without_user_info(url).split("?", 1)[0]
    api = _MLFLOW_API.search(url)
    return (url[: api.start()] if api else url) or "of MLflow"


def _origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (no user info, path or query)."""
    parsed = urllib.parse.urlsplit(without_user_info(url))
    return f"{parsed.scheme}://{parsed.netloc}" if parsed.scheme and parsed.netloc else ""


def _reason(failure: BaseException) -> str:
    """``Connection refused``, ``Name or service not known``, ``timed out``: the operating system's words."""
    said = [str(cause) for cause in _chain(failure)] + [str(getattr(failure, "kwargs", {}).get("error", ""))]
    found = _OS_REASON.search(" ".join(said))
    if found:
        return found["reason"].strip()
    if "Timeout" in {cls.__name__ for cls in type(failure).__mro__} or "timed out" in str(failure).lower():
        return "timed out"
    return type(failure).__name__
