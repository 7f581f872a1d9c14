"""`planstack index …`: build, query, list and inspect the retrieval indexes.

The index store and the embedder are the stack's knowledge base (`<home>/indexes`, the configured
`retrieval` settings); `--home` points the group at another state folder.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from retrieval.build import build_collections, packaged_corpus_dir
from retrieval.errors import CollectionNotFoundError, RetrievalError
from retrieval.ingest import IngestResult
from retrieval.knowledge import KnowledgeBase
from serving.cli.common import settings_of
from serving.stack import build_stack

app = typer.Typer(name="index", help="Build, query and inspect the retrieval indexes.", no_args_is_help=True)

HomeOption = Annotated[
    Path | None,
    typer.Option("--home", help="State folder; indexes live in <home>/indexes. Default: the configured home."),
]
CollectionOption = Annotated[str, typer.Option("--collection", "-c", help="Collection name.")]
TenantOption = Annotated[
    str | None, typer.Option("--tenant", help="Tenant owning a private collection (default: shared collections).")
]


@app.callback()
def _main(ctx: typer.Context, home: HomeOption = None) -> None:
    settings = settings_of(ctx)
    ctx.obj = settings if home is None else settings.model_copy(update={"home": home.expanduser()})


def _knowledge(ctx: typer.Context) -> KnowledgeBase:
    return build_stack(settings_of(ctx)).knowledge_base


def _fail(console: Console, exc: RetrievalError) -> typer.Exit:
    console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
    return typer.Exit(1)


@app.command()
def build(
    ctx: typer.Context,
    folder: Annotated[
        Path | None,
        typer.Argument(help="Corpus folder; each subfolder becomes a collection. Default: the demo corpus."),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option("--collection", "-c", help="Build only this collection (subfolder), or put the folder into it."),
    ] = None,
    tenant: TenantOption = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Rebuild from scratch instead of incrementally.")] = False,
    prune: Annotated[bool, typer.Option(help="Delete documents no longer in the folder.")] = True,
) -> None:
    """Ingest a folder of Markdown/text documents into collections, with a progress bar."""
    knowledge = _knowledge(ctx)
    console = Console(stderr=True)
    source = folder or knowledge.store.config.corpus_dir or packaged_corpus_dir()
    store, embedder = knowledge.store, knowledge.embedder
    with Progress(
        TextColumn("[bold]indexing[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task(str(source), total=None)

        def on_document(result: IngestResult) -> None:
            progress.update(task, advance=1, description=result.source)

        try:
            report = build_collections(
                store,
                embedder,
                source,
                collection=collection,
                tenant=tenant,
                fresh=fresh,
                prune=prune,
                on_document=on_document,
                on_plan=lambda total: progress.update(task, total=total),
            )
        except RetrievalError as exc:
            raise _fail(console, exc) from exc
    table = Table("collection", "docs", "added", "dups", "deleted", "unchanged", "chunks", "index", "note")
    for c in report.collections:
        note = f"rebuilt: {c.rebuilt_reason}" if c.rebuilt_reason else ""
        table.add_row(
            str(c.ref),
            str(c.documents),
            str(c.added),
            str(c.duplicates),
            str(c.deleted),
            str(c.unchanged),
            str(c.count),
            c.index_type,
            note,
        )
    Console().print(table)


@app.command()
def query(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The question or search text.")],
    k: Annotated[int | None, typer.Option("--k", "-k", min=1, max=100, help="Passages to return.")] = None,
    domain: Annotated[str | None, typer.Option("--domain", help="Only passages of this domain.")] = None,
    collection: Annotated[str | None, typer.Option("--collection", "-c", help="Search only this collection.")] = None,
    tenant: TenantOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Top-k passages for a text, best first."""
    kb = _knowledge(ctx)
    console = Console()
    if collection is not None:
        if kb.store.ref(collection, tenant) not in kb.store.list(tenant=tenant):
            raise _fail(Console(stderr=True), CollectionNotFoundError(f"collection {collection} does not exist"))
        kb = KnowledgeBase(
            kb.store, kb.embedder, exclude=frozenset(r.name for r in kb.store.list(tenant=tenant)) - {collection}
        )
    try:
        passages = kb.search(text, k=k or kb.store.config.default_k, domain=domain, tenant=tenant)
    except RetrievalError as exc:
        raise _fail(Console(stderr=True), exc) from exc
    if as_json:
        print(json.dumps([asdict(p) for p in passages], indent=2, ensure_ascii=False))
        return
    table = Table("#", "score", "source", "passage", show_lines=True)
    for i, p in enumerate(passages, 1):
        table.add_row(str(i), f"{p.score:.3f}", p.source, p.text)
    console.print(table)


@app.command("list")
def list_collections(ctx: typer.Context, tenant: TenantOption = None) -> None:
    """Shared collections, and the tenant's private ones when --tenant is given."""
    store = _knowledge(ctx).store
    table = Table("collection", "tenant", "domain", "chunks", "index", "model", "updated")
    try:
        for ref in store.list(tenant=tenant):
            m = store.manifest(ref)
            table.add_row(
                ref.name, ref.tenant or "-", m.domain or "-", str(m.count), m.index_type, m.model_name, m.updated_at
            )
    except RetrievalError as exc:
        raise _fail(Console(stderr=True), exc) from exc
    Console().print(table)


@app.command("delete-doc")
def delete_doc(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help='Document source, e.g. "travel/per-diem.md".')],
    collection: CollectionOption,
    tenant: TenantOption = None,
) -> None:
    """Delete every chunk of one document from a collection."""
    store = _knowledge(ctx).store
    try:
        target = store.open(store.ref(collection, tenant))
        deleted = target.delete_document(source)
        if deleted:
            store.save(target)
    except RetrievalError as exc:
        raise _fail(Console(stderr=True), exc) from exc
    Console().print(f"deleted {deleted} chunk(s) of {source} from {collection}")
    if not deleted:
        raise typer.Exit(1)


@app.command()
def info(ctx: typer.Context, collection: CollectionOption, tenant: TenantOption = None) -> None:
    """The manifest of a collection, after verifying its files."""
    store = _knowledge(ctx).store
    try:
        ref = store.ref(collection, tenant)
        manifest = store.manifest(ref)
        store.open(ref)  # checksums, counts
    except RetrievalError as exc:
        raise _fail(Console(stderr=True), exc) from exc
    print(manifest.model_dump_json(indent=2))

