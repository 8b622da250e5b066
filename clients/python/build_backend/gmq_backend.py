"""The package's build backend (PEP 517 and PEP 660), standard library only.

Why not setuptools: its backend needs the "wheel" package to build a wheel
before setuptools 70.1, and a fresh venv has none (Python 3.12's has no
setuptools at all), so `pip install --no-index --no-build-isolation` could
not install this package offline. gmq_client is pure Python, so a wheel is
a zip of its files and three small metadata files, written here; pip
installs it the same way with or without build isolation, with or without
network.

The package's metadata is METADATA below; its version is VERSION in
gmq_client/client.py, read without importing it.
"""
import ast
import base64
import hashlib
import io
import os
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

NAME = "gmq-client"
PACKAGE = "gmq_client"
METADATA = [
    ("Summary", "A client for gmq's HTTP API, with a worker loop; standard library only"),
    ("Requires-Python", ">=3.8"),
    ("Classifier", "Programming Language :: Python :: 3"),
    ("Classifier", "Typing :: Typed"),
    ("Description-Content-Type", "text/markdown"),
]
# SDIST lists what a source archive holds besides the package: what it needs to build again.
SDIST = ["pyproject.toml", "README.md", "build_backend/gmq_backend.py"]
# EPOCH is every archived file's time (zip's earliest), so that a build is the same every time.
EPOCH = (1980, 1, 1, 0, 0, 0)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    """Write the wheel into wheel_directory; return its file name."""
    return _wheel(wheel_directory, [(_source_name(p), _read(p)) for p in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """Write a wheel that puts this folder on sys.path (pip install -e)."""
    pth = (ROOT + "\n").encode("utf-8")
    return _wheel(wheel_directory, [("__editable__.%s.pth" % _dist_name(), pth)])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    """Write the source archive into sdist_directory; return its file name."""
    base = "%s-%s" % (_dist_name(), version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        files = [(_source_name(p), _read(p)) for p in _package_files()]
        files += [(p, _read(os.path.join(ROOT, p))) for p in SDIST]
        files.append(("PKG-INFO", _metadata()))
        for path, data in files:
            info = tarfile.TarInfo("%s/%s" % (base, path))
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return name


def version() -> str:
    """VERSION of gmq_client/client.py, a string literal."""
    tree = ast.parse(_read(os.path.join(ROOT, PACKAGE, "client.py")).decode("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "VERSION" for t in node.targets):
            value = ast.literal_eval(node.value)
            if isinstance(value, str):
                return value
    raise RuntimeError("gmq_backend: no VERSION = \"...\" in %s/client.py" % PACKAGE)


def _wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    """Write a py3-none-any wheel of files plus its dist-info; return its name."""
    info = "%s-%s.dist-info" % (_dist_name(), version())
    files = files + [
        (info + "/METADATA", _metadata()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: gmq_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = "".join("%s,sha256=%s,%d\n" % (path, _digest(data), len(data)) for path, data in files)
    files.append((info + "/RECORD", (record + info + "/RECORD,,\n").encode("utf-8")))
    name = "%s-%s-py3-none-any.whl" % (_dist_name(), version())
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data in files:
            entry = zipfile.ZipInfo(path, EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(entry, data)
    return name


def _metadata() -> bytes:
    """The core metadata (PKG-INFO, METADATA), the README as its description."""
    head = [("Metadata-Version", "2.1"), ("Name", NAME), ("Version", version())] + METADATA
    text = "".join("%s: %s\n" % field for field in head)
    return (text + "\n").encode("utf-8") + _read(os.path.join(ROOT, "README.md"))


def _package_files() -> List[str]:
    """The package's files: its modules and py.typed, never a cache."""
    found: List[str] = []
    for folder, dirs, names in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py") or n == "py.typed"]
    return found


def _source_name(path: str) -> str:
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


def _dist_name() -> str:
    """NAME as wheel and sdist file names spell it (PEP 427, PEP 625)."""
    return NAME.replace("-", "_")


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
