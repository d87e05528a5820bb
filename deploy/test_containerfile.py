#!/usr/bin/env python3
"""Checks deploy/Containerfile's runtime stage against a built markerd, without pulling an image: every shared
library `ldd` lists for markerd must be
  - in a Debian package that the runtime stage's `apt-get install` line installs, or one that apt installs with
    them (their Depends and Pre-Depends, followed in this machine's dpkg database: both are Debian 12), or
  - a Swift runtime library that the runtime stage copies from the build stage's /usr/lib/swift/linux, or
  - in libc6, which the base image has.
It also checks the stage's non-root USER, the /data VOLUME, the HEALTHCHECK and that its GLIBC_TUNABLES are the
Makefile's.

    python3 deploy/test_containerfile.py --markerd .build/test/release/markerd [--containerfile FILE]

Exit status 0 when all holds; otherwise each problem on one line and status 1.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SWIFT_RUNTIME = "/usr/lib/swift/linux"  # where the Swift images keep it (the build stage's toolchain)
BASE_PACKAGES = {"libc6"}
# Only debug builds link it; the image builds with -c release.
DEBUG_ONLY = {"libswiftSwiftOnoneSupport.so"}


def instructions(path):
    """(INSTRUCTION, arguments) of each instruction, continuation lines joined, comments dropped."""
    result, current = [], ""
    for line in open(path):
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current:
            keyword, _, rest = current.partition(" ")
            result.append((keyword.upper(), rest.strip()))
        current = ""
    return result


def runtime_stage(path):
    """The instructions after the last FROM."""
    steps = instructions(path)
    last = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last + 1:]


def installed_by_apt(stage):
    """Packages named on the stage's `apt-get install` commands."""
    packages = set()
    for keyword, rest in stage:
        if keyword != "RUN":
            continue
        for command in re.split(r"&&|;|\|\|", rest):
            words = shlex.split(command)
            if "apt-get" in words and "install" in words:
                packages |= {w for w in words[words.index("install") + 1:] if not w.startswith("-")}
    return packages


def copied_swift_libraries(stage):
    copied = set()
    for keyword, rest in stage:
        if keyword == "COPY" and "--from=build" in rest:
            sources = [w for w in rest.split() if not w.startswith("--")][:-1]
            copied |= {os.path.basename(s) for s in sources if os.path.dirname(s) == SWIFT_RUNTIME}
    return copied


def installed_packages():
    """{package: "Pre-Depends, Depends"} of every package installed here (one dpkg-query)."""
    output = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Status}\t${Package}\t${Pre-Depends}, ${Depends}\n"],
                            capture_output=True, text=True, check=True).stdout
    return {fields[1]: fields[2] for fields in (line.split("\t") for line in output.splitlines())
            if len(fields) == 3 and fields[0] == "installed"}


def dependency_closure(packages, installed):
    """The packages and, recursively, their Depends and Pre-Depends (the first installed alternative)."""
    seen, todo = set(), list(packages)
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        # A package not installed here has no dependencies to follow (its libraries then fail below).
        for clause in installed.get(package, "").split(","):
            names = [alternative.strip().split(" ")[0].split(":")[0] for alternative in clause.split("|")]
            todo += [name for name in names if name in installed][:1]
    return seen


def ldd(binary):
    """{soname: resolved path} of every library ldd lists (not the vDSO); a path of None when not found."""
    output = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libraries = {}
    for line in output.splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if match:
            libraries[match.group(1)] = None if match.group(2) == "not" else match.group(2)
        elif re.match(r"\s*/\S+\s+\(", line):
            path = line.split()[0]
            libraries[os.path.basename(path)] = path
    return libraries


def owners(paths):
    """{path: the Debian package that owns it (under either name of a merged /usr)} (one dpkg -S)."""
    names = {}
    for path in paths:
        for name in {path, os.path.realpath(path)}:
            names[name] = path
            names["/usr" + name if not name.startswith("/usr/") else name[len("/usr"):]] = path
    output = subprocess.run(["dpkg", "-S", *sorted(names)], capture_output=True, text=True).stdout
    found = {}
    for line in output.splitlines():
        packages, _, name = line.rpartition(": ")
        if name in names:
            found[names[name]] = packages.split(",")[0].split(":")[0].strip()
    return found


def makefile_tunables():
    text = open(os.path.join(HERE, "..", "Makefile")).read()
    return re.search(r"^GLIBC_TUNABLES \?= (\S+)", text, re.M).group(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markerd", required=True, help="a built markerd (release; a debug build links one more)")
    parser.add_argument("--containerfile", default=os.path.join(HERE, "Containerfile"))
    args = parser.parse_args()
    stage = runtime_stage(args.containerfile)
    apt = installed_by_apt(stage)
    available = dependency_closure(apt, installed_packages()) | BASE_PACKAGES
    copied = copied_swift_libraries(stage)
    problems = []
    if not apt:
        problems.append("the runtime stage has no apt-get install line")
    local_runtime = None
    libraries = ldd(args.markerd)
    packages = owners([path for path in libraries.values() if path])
    for soname, path in sorted(libraries.items()):
        if path is None:
            problems.append(f"{soname}: ldd does not find it here")
        elif os.path.dirname(path).endswith("/lib/swift/linux"):  # the toolchain's, wherever it is installed
            local_runtime = os.path.dirname(path)
            if soname not in copied and soname not in DEBUG_ONLY:
                problems.append(f"{soname}: a Swift runtime library the runtime stage does not copy from {SWIFT_RUNTIME}")
        else:
            package = packages.get(path)
            if package is None:
                problems.append(f"{soname} ({path}): no Debian package owns it")
            elif package not in available:
                problems.append(f"{soname}: in Debian package {package}, which the runtime stage does not install")
    for name in sorted(copied):
        if local_runtime and not os.path.exists(os.path.join(local_runtime, name)):
            problems.append(f"COPY --from=build {SWIFT_RUNTIME}/{name}: the Swift toolchain has no such file")
    user = [rest for keyword, rest in stage if keyword == "USER"]
    if not user or user[-1].split(":")[0] in ("root", "0"):
        problems.append(f"the runtime stage runs as root (USER {user})")
    if not any(keyword == "VOLUME" and "/data" in rest for keyword, rest in stage):
        problems.append("no VOLUME /data")
    if not any(keyword == "HEALTHCHECK" and "/healthz" in rest for keyword, rest in stage):
        problems.append("no HEALTHCHECK of /healthz")
    env = [rest for keyword, rest in stage if keyword == "ENV" and rest.startswith("GLIBC_TUNABLES=")]
    if env != [f"GLIBC_TUNABLES={makefile_tunables()}"]:
        problems.append(f"ENV {env}, not the Makefile's GLIBC_TUNABLES={makefile_tunables()}")
    for text in problems:
        print(f"deploy/Containerfile: {text}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"deploy/Containerfile: markerd's {len(libraries)} shared libraries come from the {len(apt)} "
          f"packages installed ({len(available)} with their dependencies), the {len(copied)} Swift runtime "
          "libraries copied, or libc6")


if __name__ == "__main__":
    main()
