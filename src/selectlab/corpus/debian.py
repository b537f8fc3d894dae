"""Installed Debian packages as declared inputs: which files they own, and their versions.

The embedded corpus reads text that Debian packages install. Reading a whole system directory
(every changelog under /usr/share/doc, every man page) makes the corpus depend on whatever else
happens to be installed, so readers instead take the files that named packages own, from dpkg's
own file lists, and the build records each package's version (selectlab.corpus.inputs).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from selectlab.corpus.passages import MissingResourceError

DPKG_INFO = "/var/lib/dpkg/info"
DPKG_STATUS = "/var/lib/dpkg/status"


@functools.lru_cache(maxsize=256)
def package_files(package: str, info_dir: str = DPKG_INFO) -> tuple[str, ...]:
    """The paths `package` installed (dpkg's `<package>[:<arch>].list`), in dpkg's order."""
    folder = Path(info_dir)
    lists = [folder / f"{package}.list", *sorted(folder.glob(f"{package}:*.list"))]
    found = [path for path in lists if path.is_file()]
    if not found:
        raise MissingResourceError(f"Debian package {package!r} is not installed (a declared "
                                   f"corpus input): apt-get install {package}")
    return tuple(line for line in found[0].read_text().splitlines() if line)


@functools.lru_cache(maxsize=2)
def installed_versions(status_path: str = DPKG_STATUS) -> dict[str, str]:
    """Package -> installed version, from dpkg's status file."""
    versions: dict[str, str] = {}
    text = Path(status_path).read_text(encoding="utf-8", errors="replace")
    for block in text.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", block, re.MULTILINE))
        if "Package" in fields and "install ok installed" in fields.get("Status", ""):
            versions[fields["Package"]] = fields.get("Version", "")
    return versions


def package_version(package: str) -> str:
    version = installed_versions().get(package)
    if version is None:
        raise MissingResourceError(f"Debian package {package!r} is not installed (a declared "
                                   f"corpus input): apt-get install {package}")
    return version


def owned_files(packages, pattern: str) -> list[Path]:
    """Regular files (not symlinks) owned by `packages` whose path matches `pattern`, sorted."""
    regex = re.compile(pattern)
    paths = {Path(p) for package in packages for p in package_files(package) if regex.match(p)}
    return sorted(p for p in paths if p.is_file() and not p.is_symlink())
