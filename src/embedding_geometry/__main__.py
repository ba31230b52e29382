"""Command line: ``python -m embedding_geometry build [--profile P] [--only SLUG] [--force]``,
``python -m embedding_geometry pdf`` (the built book as one PDF, ``make pdf``),
``python -m embedding_geometry atlas [--profile P] [--executor inprocess|ray] [--out DIR]``
(chapter 8's measurements on the profile's models, streamed and sharded: ``book.atlas``), and
``python -m embedding_geometry new-chapter SLUG --title T --study MODULE [--part P]`` (a new
chapter's notebook, conventions in place: CONTRIBUTING.md).

A bad input (a profile that is not YAML, a chapter that does not exist, a value a chapter
refuses) prints one line that names it and what is expected, and exits with status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .book import rules
from .core import float_path
from .core.errors import BookError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m embedding_geometry", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("build", help="run the chapter notebooks and build the site")
    run.add_argument("--profile", default="default", help="params/<name>.yaml or a path to a YAML profile")
    run.add_argument("--only", action="append", metavar="SLUG", help="run only this chapter (repeatable)")
    run.add_argument("--force", action="store_true", help="rerun chapters even when unchanged")
    run.add_argument("--no-site", action="store_true", help="run the notebooks but do not build the site")
    run.add_argument("--root", type=Path, default=Path.cwd(), help="the book's root folder (default: here)")
    pdf = commands.add_parser("pdf", help="render the built book to one PDF (_build/pdf/book.pdf)")
    pdf.add_argument("--root", type=Path, default=Path.cwd(), help="the book's root folder (default: here)")
    pdf.add_argument("--output", type=Path, default=None, help="where to write the PDF")
    atlas = commands.add_parser("atlas", help="measure chapters 1-4's per-depth statistics on many models (chapter 8)")
    atlas.add_argument("--profile", default="default", help="params/<name>.yaml or a path: its 08_across_models values")
    atlas.add_argument("--executor", default="inprocess", choices=("inprocess", "ray"),
                       help="measure the shards here, or as Ray tasks (RAY_ADDRESS, else a local instance)")
    atlas.add_argument("--workers", type=int, default=None, help="CPUs of a local Ray instance (default: all)")
    atlas.add_argument("--out", type=Path, default=None, help="results folder (default: build/atlas/<profile>)")
    atlas.add_argument("--root", type=Path, default=Path.cwd(), help="the book's root folder (default: here)")
    new = commands.add_parser("new-chapter", help="write a new chapter's notebook and package (CONTRIBUTING.md)")
    new.add_argument("slug", help="NN_name, e.g. 09_pool_norm: the notebook's name and the chapter's order")
    new.add_argument("--title", required=True, help="the chapter's title")
    new.add_argument("--study", required=True, help="its study module, in the chapter's package (to write)")
    new.add_argument("--part", help="the table of contents' part it is listed in (default: 'More chapters')")
    new.add_argument("--root", type=Path, default=Path.cwd(), help="the book's root folder (default: here)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.command == "new-chapter":
        return _new_chapter(root, args)
    if not (root / "_config.yml").is_file():
        print(f"--root {str(root)!r} is not a book (it has no _config.yml); run in the book's folder or "
              "pass --root", file=sys.stderr)
        return 1
    try:  # the kernels and tasks it starts inherit the float path's limits (core.float_path)
        os.environ.update(float_path.environment())
    except BookError as error:
        print(error, file=sys.stderr)
        return 1
    start = time.time()
    if args.command == "pdf":
        return make_pdf(root, args.output)
    if args.command == "atlas":
        return _atlas(args, root, start)
    try:  # the profile is checked before torch and the rest load: a typo is reported at once
        chosen = rules.load(args.profile, root, rules.slugs(root))
        from .book import build, schedule  # loads torch: after the profile is checked

        schedule.install_sigterm_handler()
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        code = build.build(root, chosen, args.only, args.force, site=not args.no_site)
    except BookError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"{'done' if code == 0 else 'failed'} in {time.time() - start:.1f} s")
    return code


def make_pdf(root: Path, output: Path | None) -> int:
    """``python -m embedding_geometry pdf``: the built book as one PDF (``book.pdf``)."""
    from .book import pdf  # each subcommand loads only its own modules (build and atlas: torch)

    made = _reported(lambda: pdf.make(root, output))
    if made is None:
        return 1
    print(f"wrote {made.path} ({made.path.stat().st_size / 1e6:.1f} MB, {sum(made.charts.values())} charts as "
          f"pictures) in {made.seconds:.1f} s")
    return 0


def _atlas(args, root: Path, start: float) -> int:
    """The atlas command: a bad input is one line; an interrupted run keeps its finished shards."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args.root = root
    try:
        from .book import atlas, schedule  # loads torch: only the atlas subcommand needs it

        schedule.install_sigterm_handler()

        code = atlas.main(args)
    except BookError as error:
        print(error, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("atlas interrupted: the shards written so far are kept; run the same command again to resume",
              file=sys.stderr)
        return 130
    print(f"done in {time.time() - start:.1f} s")
    return code


def _new_chapter(root: Path, args: argparse.Namespace) -> int:
    from .book import scaffold  # each subcommand loads only its own modules (build and atlas: torch)

    package = Path(__file__).parent  # the package imported: the repository's src/ in an editable install
    path = _reported(lambda: scaffold.new_chapter(root, args.slug, args.title, args.study, args.part, package=package))
    if path is None:
        return 1
    folder = package / "chapters" / scaffold.package_name(args.slug)
    print(f"wrote {path.relative_to(root)} and {folder}/__init__.py; now write {folder}/{args.study}.py "
          f"and {folder}/ledger.yaml (CONTRIBUTING.md)")
    return 0


def _reported(action):
    """``action()``, or None after printing its :class:`BookError` as the one line it is."""
    try:
        return action()
    except BookError as error:
        print(error, file=sys.stderr)
        return None


if __name__ == "__main__":
    sys.exit(main())
