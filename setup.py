"""Build script: everything is in pyproject.toml but compiling with mypyc and shipping the library.

The modules listed in ``simcache/native/sources.py`` are compiled to C
extension modules in groups, each its own mypyc call and shared library:
``engine`` (the event loop, workloads and model components) and ``estimate``
(the analytic estimate), with bit-identical results. Compiling needs a C
compiler (gcc and the Python headers). What each choice below costs at install
and at run time, as measured, is in README.md ("What an install compiles");
how much faster compiled code runs, in bench/README.md.

- ``SIMCACHE_COMPILE``: ``0`` (the default) compiles nothing (and removes an
  earlier build's compiled modules), ``engine`` the engine group alone, ``1``
  both groups.
- ``SIMCACHE_OPT_LEVEL``: gcc's ``-O`` level for mypyc's groups, ``1`` by default (``3``: a
  longer compile); the native engine compiles at ``-O2``.
- ``SIMCACHE_PGO``: a profile-guided C compile (:class:`ProfileGuidedBuildExt`): ``0`` (the
  default) none, ``native`` the native engine's (the README's test command), ``1`` every
  extension's.
- ``SIMCACHE_NATIVE``: the optional Cython extensions (issue 35: the native engine,
  ``simcache/native/_engine.pyx``, and the native event queue, ``_queue.pyx``; Cython 3, which the
  build backend asks for) are built unless it is ``0``; with ``0`` an earlier build's are removed,
  the Python engine runs every scenario and its kernel keeps its own heap.
- If mypyc or the C compiler fails for a group, the install still succeeds
  and that group's Python sources run (the extensions are optional); the
  other group stays compiled, since the groups import each other as ordinary
  Python modules.

Next to the compiled modules this writes ``simcache/native/compiled_digest.py``:
for each group mypyc compiled, the digest of the sources it was compiled from
and its shared library; ``simcache/native/choice.py`` uses a group's compiled
modules only while its sources still match.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DIGEST_FILE = ROOT / "simcache" / "native" / "compiled_digest.py"
# Commands that build extension modules; metadata-only runs of this script (egg_info, ...) skip
# mypyc.
BUILD_COMMANDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}


def load_file(name: str, path: Path) -> ModuleType:
    """A module of this checkout, read on its own (the package would need its dependencies)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# What to compile and how (the docstring says what each costs), as the build backend reads it.
BACKEND = load_file("simcache_build_backend", ROOT / "_build_backend" / "backend.py")
COMPILE, PGO = BACKEND.build_options()
OPT_LEVEL = os.environ.get("SIMCACHE_OPT_LEVEL", "1")  # gcc's -O level (0-3) for mypyc's groups
# The native engine's: -O2 measured 4-8 % faster than -O1 (-O3 no faster) for 4 s more of compile
# (bench/README.md, "The native engine at -O2, profile-guided").
NATIVE_OPT_LEVEL = "2"
# gcc's flags for each stage of a profile-guided compile: code the training never ran is optimised
# as without a profile, not as cold (-fprofile-partial-training).
PROFILE_FLAGS = {
    "generate": ["-fprofile-generate"],
    "use": ["-fprofile-use", "-fprofile-partial-training", "-Wno-missing-profile"],
}
# The native engine's C is one file of about 140,000 lines, which gcc compiles on one core (33-36 s
# at -O2 here). With -flto it writes its intermediate code (5 s) and compiles that at the link, in
# parallel partitions (-flto=auto: one job a core, through make; serially without make): 17-20 s on
# two cores, the same code (the default's loop: 179.0 M instructions against 178.9 M). A compiler
# that does not take the flags builds it again without them. Only a compile without a profile
# uses it (the first command's two minutes): profile-guided, the partitioned engine ran the
# default 2 % slower (a median of 12 rounds, within their noise), and that install takes minutes
# anyway (bench/README.md, "Install time of the first command").
LTO_COMPILE = ["-flto"]
LTO_LINK = ["-flto=auto"]
NATIVE = BACKEND.native_requested()
# The optional Cython extensions (unless SIMCACHE_NATIVE=0): issue 35's native engine and queue.
NATIVE_SOURCES = {
    "simcache.native._queue": ROOT / "simcache" / "native" / "_queue.pyx",
    "simcache.native._engine": ROOT / "simcache" / "native" / "_engine.pyx",
}


def load_engine_sources() -> ModuleType:
    """``simcache/native/sources.py`` read on its own (importing the package would need its
    dependencies)."""
    return load_file("simcache_engine_sources", ROOT / "simcache" / "native" / "sources.py")


def remove_compiled(native: ModuleType) -> None:
    """Delete an earlier build's compiled modules, of every group, from the source tree (an
    editable install puts them there)."""
    DIGEST_FILE.unlink(missing_ok=True)
    for module in native.COMPILED_MODULES:
        for compiled in native.compiled_candidates(module, ROOT):
            compiled.unlink(missing_ok=True)
    for shared in ROOT.glob(native.SHARED_LIBRARY_GLOB):
        shared.unlink()


def group_extensions(native: ModuleType, group: Any) -> list[Any]:
    """mypyc's extension modules for one compile group (``native/sources.CompileGroup``), or none
    when mypyc fails."""
    sources = [str(native.source_path(module, ROOT).relative_to(ROOT)) for module in group.modules]
    # Type information for mypyc only: third-party packages are not installed while this builds, so
    # their imports are taken as Any, and errors in modules outside the group are not reported.
    # Those modules (the other group's included) are not compiled in this call: the group's code
    # imports them as Python modules.
    options = ["--ignore-missing-imports", "--follow-imports=silent", "--config-file="]
    try:
        from mypyc.build import mypycify

        extensions: list[Any] = mypycify(
            options + sources,
            opt_level=OPT_LEVEL,
            debug_level="0",
            group_name=group.mypyc_name,
            target_dir=f"build/mypyc-{group.name}",
        )
    # mypyc reports type errors by exiting: a newer mypy may be stricter
    except (Exception, SystemExit) as error:
        print(
            f"simcache: not compiling the {group.name} group ({error!r}); its Python sources will "
            "run",
            file=sys.stderr,
        )
        return []
    for extension in extensions:
        # a failed compile leaves the Python sources in charge, not a failed install
        extension.optional = True
    return extensions


def compiled_extensions() -> list[Any]:
    """mypyc's extension modules for every group that mypyc compiled, or none when not compiling."""
    if not BUILD_COMMANDS.intersection(sys.argv[1:]):
        return []
    native = load_engine_sources()
    # Every build compiles each group afresh or leaves it to its sources: an earlier build's modules
    # must not outlive a C compile that fails (optional extensions), or they would pass for these
    # sources' and run stale code.
    remove_compiled(native)
    extensions: list[Any] = []
    recorded: dict[str, tuple[str, str]] = {}
    for group in chosen_groups(native):
        built = group_extensions(native, group)
        if built:
            (shared,) = [
                extension.name for extension in built if extension.name.endswith("__mypyc")
            ]
            recorded[group.name] = (native.source_digest(group.modules, ROOT), shared)
            extensions += built
    if recorded:
        # Lines under 100 characters: tests/project/test_style.py reads this file too.
        entries = "".join(
            f"    {name!r}: (\n        {digest!r},\n        {shared!r},\n    ),\n"
            for name, (digest, shared) in recorded.items()
        )
        DIGEST_FILE.write_text(
            '"""Written by setup.py: for each compiled group, the digest of the sources it was\n'
            'built from and its shared library."""\n\n'
            f"GROUPS = {{\n{entries}}}\n"
        )
    return extensions


def native_extensions() -> list[Any]:
    """The Cython extensions (the native engine and queue) unless ``SIMCACHE_NATIVE=0``; with it
    none, and an earlier build's removed (the Python engine and the kernel's list heap in charge).
    Optional: if Cython or the C compile fails, the install succeeds without them."""
    if not BUILD_COMMANDS.intersection(sys.argv[1:]):
        return []
    if not NATIVE:
        for source in NATIVE_SOURCES.values():
            for built in source.parent.glob(source.stem + ".*.so"):
                built.unlink()
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError as error:
        print(f"simcache: not building the native engine ({error!r})", file=sys.stderr)
        return []
    extensions: list[Any] = cythonize(
        [
            # no fused multiply-adds (bit-identity with the Python engine on every CPU); no debug
            # information (a third of gcc's time)
            Extension(
                name,
                [str(source.relative_to(ROOT))],
                extra_compile_args=["-ffp-contract=off", "-g0"],
            )
            for name, source in NATIVE_SOURCES.items()
        ],
        build_dir="build/cython",
        quiet=True,
    )
    for extension in extensions:
        extension.optional = True
    return extensions


def chosen_groups(native: ModuleType) -> list[Any]:
    """The compile groups ``SIMCACHE_COMPILE`` names: none for 0, all for 1, else a
    comma-separated list of names."""
    if COMPILE in ("0", "1"):
        return list(native.COMPILE_GROUPS) if COMPILE == "1" else []
    names = {name.strip() for name in COMPILE.split(",")}
    known = {group.name for group in native.COMPILE_GROUPS}
    if not names <= known:
        groups = ", ".join(sorted(known))
        raise SystemExit(
            f"simcache: SIMCACHE_COMPILE={COMPILE!r}: give 0, 1 or group names ({groups})"
        )
    return [group for group in native.COMPILE_GROUPS if group.name in names]


class ProfileGuidedBuildExt(build_ext):
    """``build_ext``, profile-guided as ``SIMCACHE_PGO`` says (``native``: the native engine's):
    compile the extensions it guides with gcc's ``-fprofile-generate``, run the training
    (``simcache/cli/training.py``: the scenario library through the instrumented modules), compile
    them again with ``-fprofile-use``. Bit-identical results, faster (bench/README.md, "The native
    engine at -O2, profile-guided"), for a second compile and the training run.

    With ``SIMCACHE_PGO=0`` (the default) it builds once without a profile, as it does after any
    failure of the instrumented build, of the training or of the guided compile (said on stderr).
    """

    lto = True
    """Whether the native extensions compile with link-time optimisation (until that fails)."""

    def run(self) -> None:
        # the two groups' C files at once, one per core
        self.parallel = self.parallel or os.cpu_count() or 1
        # the option (a name or None): run() replaces it with the compiler object it makes
        compiler = self.compiler
        everything = list(self.extensions)
        guided = [extension for extension in everything if self._guided(extension)]
        try:
            if not guided:
                self._compile(compiler, everything, "plain")
                return
            # an earlier build's profile: its counts would add up
            for stale in Path(self.build_temp).rglob("*.gcda"):
                stale.unlink()
            # the others once and for all; the guided ones instrumented (counts land next to
            # each object)
            self._compile(compiler, everything, "generate")
            trained = self._built(guided) and self._train()
            if trained:
                self._compile(compiler, guided, "use")
            # no profile, or a compiler that takes the instrumentation only
            if not trained or not self._built(guided):
                if trained:
                    print(
                        "simcache: the profile-guided compile failed; compiling without a profile",
                        file=sys.stderr,
                    )
                self._compile(compiler, guided, "plain")
        finally:
            self.extensions = everything

    def _guided(self, extension: Any) -> bool:
        """Whether ``SIMCACHE_PGO`` profile-guides this extension's compile."""
        return PGO == "1" or (PGO == "native" and extension.name in NATIVE_SOURCES)

    def _compile(self, compiler: Any, extensions: list[Any], stage: str) -> None:
        """Compile ``extensions`` (again) as :meth:`_compile_once` does, the native ones with
        link-time optimisation unless profile-guided; if those fail to build with it, once more
        without (and without it for the rest of the build)."""
        self._compile_once(compiler, extensions, stage)
        with_lto = [extension for extension in extensions if self._uses_lto(extension, stage)]
        if with_lto and not self._built(with_lto):
            print(
                "simcache: the native engine's compile with link-time optimisation failed; "
                "compiling it without",
                file=sys.stderr,
            )
            self.lto = False
            self._compile_once(compiler, with_lto, stage)

    def _compile_once(self, compiler: Any, extensions: list[Any], stage: str) -> None:
        """Compile ``extensions`` (again): the guided ones at ``stage`` (``plain``, ``generate``
        the instrumented build, ``use`` the profile-guided one), the others plain. An earlier
        build of each is removed first, so that a compile that fails (the extensions are
        optional) leaves none behind: not an instrumented one."""
        for extension in extensions:
            # The extension's own functions are not interposed by other libraries: gcc may inline
            # them (with a profile, into the call sites the training found hot); without this flag
            # it may not inline an exported function. These replace mypyc's flags: -O (after
            # Python's CFLAGS, -O3 -g) and no debug information (-g0: half the compile time) are
            # said again. -ffp-contract=off: no fused multiply-adds (which aarch64's gcc would
            # otherwise form), so each float operation rounds as Python's does and the compiled
            # and native engines stay bit-identical to the sources on every machine.
            level = NATIVE_OPT_LEVEL if extension.name in NATIVE_SOURCES else OPT_LEVEL
            compile_args = [f"-O{level}", "-g0", "-fno-semantic-interposition", "-ffp-contract=off"]
            guided = self._guided_at(extension, stage)
            if guided:
                compile_args += PROFILE_FLAGS[stage]
            # the instrumented build's counters need gcc's runtime
            instrumented = guided and stage == "generate"
            link_args = list(PROFILE_FLAGS[stage]) if instrumented else []
            if self._uses_lto(extension, stage):
                # the code is compiled at the link: with the compile's flags
                compile_args += LTO_COMPILE
                link_args = [*compile_args, *LTO_LINK]
            extension.extra_compile_args = compile_args
            extension.extra_link_args = link_args
            self._remove_built(extension)
        self.extensions = extensions
        self.compiler = compiler
        self.force = True  # the same sources each time: every object is rebuilt with the new flags
        super().run()

    def _uses_lto(self, extension: Any, stage: str) -> bool:
        """Whether ``extension`` compiles with link-time optimisation at ``stage``: a native one
        compiled without a profile, while the compiler takes it."""
        return (
            self.lto and extension.name in NATIVE_SOURCES and not self._guided_at(extension, stage)
        )

    def _guided_at(self, extension: Any, stage: str) -> bool:
        """Whether ``extension`` compiles with a profile's flags at ``stage``."""
        return stage != "plain" and self._guided(extension)

    def _remove_built(self, extension: Any) -> None:
        """Delete an earlier build of ``extension``: where this build puts it, and the copy an
        editable install made in the checkout."""
        built = Path(self.get_ext_fullpath(extension.name))
        built.unlink(missing_ok=True)
        ROOT.joinpath(*extension.name.split(".")).with_name(built.name).unlink(missing_ok=True)

    def _built(self, extensions: list[Any]) -> bool:
        return all(Path(self.get_ext_fullpath(extension.name)).exists() for extension in extensions)

    def _train(self) -> bool:
        """Run the training against the instrumented modules; False (said on stderr) if it could
        not run."""
        root = ROOT if self.inplace else Path(self.build_lib).resolve()
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
        )
        command = [sys.executable, "-m", "simcache.cli.training", str(ROOT / "scenarios")]
        try:
            done = subprocess.run(command, cwd=root, env=env, timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            problem = f"did not run ({error!r})"
        else:
            if done.returncode == 0:
                return True
            problem = f"failed (exit {done.returncode})"
        print(
            f"simcache: the profile-guided build's training {problem}; compiling without a profile",
            file=sys.stderr,
        )
        return False


# The top-level files a wheel carries in simcache/spec/library/ (MANIFEST.in puts them in the sdist
# too).
LIBRARY_FILES = ("scenarios/*", "examples/*", "app.py")


class BuildPyWithLibrary(build_py):
    """``build_py``, and the scenario library, example files and what-if page copied into
    ``simcache/spec/library/`` (``simcache/spec/library/__init__.py`` finds them there, or in a
    checkout)."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib, "simcache", "spec", "library")
        for pattern in LIBRARY_FILES:
            for source in sorted(path for path in ROOT.glob(pattern) if path.is_file()):
                copy = target / source.relative_to(ROOT)
                self.mkpath(str(copy.parent))
                self.copy_file(str(source), str(copy))


setup(
    ext_modules=compiled_extensions() + native_extensions(),
    cmdclass={"build_ext": ProfileGuidedBuildExt, "build_py": BuildPyWithLibrary},
)
