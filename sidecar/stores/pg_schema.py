"""The PostgreSQL store's schema, as an ordered list of migrations.

Unlike the SQLite file, these tables are shared (by every namespace, perhaps by
several sidecars), so a schema change is migrated in place, never dropped and
rebuilt. Each migration runs once, in order, in its own transaction, under an
advisory lock so that two sidecars starting together do not both apply it.

Every table leads with ``namespace`` in its primary key and every index, so a
tier's query only ever reads that tier's rows.
"""

from __future__ import annotations

import logging

import psycopg

from sidecar.stores.sqlite_schema import BODY_WEIGHT, CONTEXT_WEIGHT, HEADING_WEIGHT

# The key of the advisory lock migrations hold: one fixed number for this schema.
log = logging.getLogger(__name__)

MIGRATION_LOCK = 0x51DECA7
TS_CONFIG = "sidecar_text"
# FTS5's bm25() constants.
K1 = 1.2
B = 0.75
BLOCK = 128  # postings to a row of ``blocks``


def impact_sql(avgdl: str, p: str = "") -> str:
    """A posting's BM25 term contribution without the IDF, the document length
    normalised against ``avgdl`` (an SQL expression), at the default column weights:
    the order in which top-k search walks a term's postings (``pg_topk``)."""
    # float8 constants: a bare 2.0 is numeric, and numeric arithmetic per posting was
    # most of a bulk build's packing time
    f = (
        f"({HEADING_WEIGHT}::float8 * {p}tf_heading + {BODY_WEIGHT}::float8 * {p}tf_body"
        f" + {CONTEXT_WEIGHT}::float8 * {p}tf_context)"
    )
    length = f"{p}doc_len / greatest({avgdl}, 1e-9)"
    norm = f"({K1}::float8 * ({1 - B}::float8 + {B}::float8 * {length}))"
    return f"({f} * {K1 + 1}::float8 / ({f} + {norm}))"


# A block's postings, one after another in one ``bytea``, each ``POSTING`` bytes:
# chunk id (int8), counts in heading, body, context (int2 each), chunk length (int4),
# big-endian (PostgreSQL's own ``int8send`` form). A search reads the bytes as they lie
# (numpy's ``frombuffer``): five arrays went through ``array_send`` element by element,
# which was most of the cost of reading a block.
POSTING = 18
POSTING_SQL = (
    "int8send({p}chunk_id) || int2send({p}tf_heading::int2) || int2send({p}tf_body::int2)"
    " || int2send({p}tf_context::int2) || int4send({p}doc_len::int4)"
)


def _in_blocks(source: str, a0: str) -> str:
    """The FROM and GROUP BY both packings share: each posting numbered into its term's
    ``BLOCK``-sized groups by impact against ``a0``."""
    impact = impact_sql(a0, "p.")
    return (
        "FROM (SELECT q.*, (row_number() OVER (PARTITION BY lexeme ORDER BY impact DESC, chunk_id)"
        f"""
                       - 1) / {BLOCK} AS blk
          FROM (SELECT p.lexeme COLLATE "C" AS lexeme, p.chunk_id, p.tf_heading,
                       p.tf_body, p.tf_context, p.doc_len, {impact} AS impact
                FROM {source} AS p) AS q) AS r
    GROUP BY lexeme, blk
    """
    )


def pack_sql(source: str, a0: str) -> str:
    """Rows of ``blocks`` (without namespace) from a relation of postings (``lexeme,
    chunk_id, tf_heading, tf_body, tf_context, doc_len``): each term's postings by impact
    against ``a0`` (an SQL expression), ``BLOCK`` to a row, each row bounded by its
    highest impact. Within a row the order does not matter (a search reads whole rows):
    the postings are aggregated in one pass, unsorted (a second sort of every posting was
    a third of the packing's time)."""
    return f"""
    SELECT lexeme, max(impact)::real AS bound, count(*)::int AS n,
           string_agg({POSTING_SQL.format(p="")}, ''::bytea) AS postings
    {_in_blocks(source, a0)}"""


def _pack_arrays_sql(source: str, a0: str) -> str:
    """``pack_sql`` as migration 7 ran it: the postings as five parallel arrays."""
    cols = ", ".join(
        f"array_agg({c}) AS {name}"
        for c, name in zip(("chunk_id", *_ARRAYS[1:]), _ARRAYS, strict=True)
    )
    return f"""
    SELECT lexeme, max(impact)::real AS bound, count(*)::int AS n, {cols}
    {_in_blocks(source, a0)}"""


_ARRAYS = ("chunk_ids", "tf_heading", "tf_body", "tf_context", "doc_len")
BLOCK_COLUMNS = "lexeme, bound, n, postings"
# A block's postings as rows (chunk_id, tf_heading, tf_body, tf_context, doc_len), for
# the SQL that reads them (the exhaustive search, a merge, a change of bounds). Since
# PostgreSQL 18 a bytea casts to an integer; before, through its hex digits.
_UNPACK = """
CREATE FUNCTION sidecar_postings(p bytea) RETURNS TABLE (
    chunk_id bigint, tf_heading integer, tf_body integer, tf_context integer, doc_len integer
) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
    SELECT {i8}, {i2_h}, {i2_b}, {i2_c}, {i4}
    FROM generate_series(0, length(p) - {size}, {size}) AS o
$f$"""


def postings_function(cast: bool) -> str:
    """``CREATE FUNCTION sidecar_postings``: with the bytea-to-integer casts (``cast``,
    PostgreSQL 18 on), else through each field's hex digits."""

    def field(at: int, size: int) -> str:
        part = f"substring(p FROM o + {at} FOR {size})"
        kind = "bigint" if size == 8 else "integer"
        if cast:
            return f"{part}{'::int2' if size == 2 else ''}::{kind}"
        return f"('x' || encode({part}, 'hex'))::bit({8 * size})::{kind}"

    return _UNPACK.format(
        i8=field(1, 8),
        i2_h=field(9, 2),
        i2_b=field(11, 2),
        i2_c=field(13, 2),
        i4=field(15, 4),
        size=POSTING,
    )


MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "text search configuration: snowball english stems, no stopwords",
        f"""
        CREATE TEXT SEARCH DICTIONARY sidecar_stem (TEMPLATE = snowball, Language = english);
        CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = simple);
        ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG}
            ALTER MAPPING FOR asciiword, word, numword, uint, int, asciihword, hword,
                              hword_part, hword_asciipart, hword_numpart
            WITH sidecar_stem;
        """,
    ),
    (
        2,
        "files, chunks, postings, vectors",
        """
        CREATE TABLE files (
            namespace text NOT NULL,
            path text NOT NULL,
            size bigint NOT NULL,
            mtime_ns bigint NOT NULL,
            sha256 text NOT NULL,
            metadata text NOT NULL,
            indexed_at double precision NOT NULL,
            PRIMARY KEY (namespace, path)
        );
        CREATE TABLE chunks (
            namespace text NOT NULL,
            id bigint GENERATED ALWAYS AS IDENTITY,
            path text NOT NULL,
            start_line integer NOT NULL,
            end_line integer NOT NULL,
            heading text NOT NULL,
            body text NOT NULL,
            hash text NOT NULL,
            tsv tsvector NOT NULL,   -- heading weighted A, body B
            doc_len integer NOT NULL, -- tokens in both columns, for BM25
            PRIMARY KEY (namespace, id)
        );
        CREATE INDEX chunks_by_path ON chunks (namespace, path);
        CREATE INDEX chunks_by_hash ON chunks (namespace, hash);
        -- The inverted index BM25 is computed from: one row per (lexeme, chunk).
        CREATE TABLE postings (
            namespace text NOT NULL,
            lexeme text COLLATE "C" NOT NULL,
            chunk_id bigint NOT NULL,
            tf_heading smallint NOT NULL,
            tf_body smallint NOT NULL,
            doc_len integer NOT NULL,
            -- covering: a search reads the index alone (after a vacuum)
            PRIMARY KEY (namespace, lexeme, chunk_id) INCLUDE (tf_heading, tf_body, doc_len)
        );
        CREATE INDEX postings_by_chunk ON postings (namespace, chunk_id);
        -- Keyed by content, like the SQLite store: float32 rows, the whole chunk
        -- first, then each of its lines.
        CREATE TABLE vectors (
            namespace text NOT NULL,
            model_id text NOT NULL,
            hash text NOT NULL,
            vec bytea NOT NULL,
            PRIMARY KEY (namespace, model_id, hash)
        );
        """,
    ),
    (
        3,
        "meta: small values kept with a namespace's index",
        """
        CREATE TABLE meta (
            namespace text NOT NULL,
            key text NOT NULL,
            value text NOT NULL,
            PRIMARY KEY (namespace, key)
        );
        """,
    ),
    (
        4,
        "namespace_stats: chunk and token counts BM25 needs, kept by triggers",
        """
        CREATE TABLE namespace_stats (
            namespace text PRIMARY KEY,
            chunks bigint NOT NULL,
            tokens bigint NOT NULL
        );
        CREATE FUNCTION sidecar_count_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO namespace_stats AS s (namespace, chunks, tokens)
                SELECT namespace, count(*), sum(doc_len) FROM new_rows GROUP BY namespace
                ON CONFLICT (namespace) DO UPDATE
                    SET chunks = s.chunks + excluded.chunks, tokens = s.tokens + excluded.tokens;
            ELSE
                UPDATE namespace_stats AS s SET chunks = s.chunks - d.n, tokens = s.tokens - d.t
                FROM (SELECT namespace, count(*) AS n, sum(doc_len) AS t
                      FROM old_rows GROUP BY namespace) AS d
                WHERE s.namespace = d.namespace;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER chunks_counted_insert AFTER INSERT ON chunks
            REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION sidecar_count_chunks();
        CREATE TRIGGER chunks_counted_delete AFTER DELETE ON chunks
            REFERENCING OLD TABLE AS old_rows
            FOR EACH STATEMENT EXECUTE FUNCTION sidecar_count_chunks();
        INSERT INTO namespace_stats
            SELECT namespace, count(*), sum(doc_len) FROM chunks GROUP BY namespace;
        """,
    ),
    (
        5,
        "chunk context: neighbouring text, a third weighted column (C)",
        """
        ALTER TABLE chunks ADD COLUMN context text NOT NULL DEFAULT '';
        ALTER TABLE postings ADD COLUMN tf_context smallint NOT NULL DEFAULT 0;
        ALTER TABLE postings DROP CONSTRAINT postings_pkey;
        ALTER TABLE postings ADD PRIMARY KEY (namespace, lexeme, chunk_id)
            INCLUDE (tf_heading, tf_body, tf_context, doc_len);
        """,
    ),
    (
        6,
        "impact-ordered postings and document frequencies, for top-k search",
        f"""
        -- The average length impacts were computed against (NULL: none computed yet).
        ALTER TABLE namespace_stats ADD COLUMN impact_avgdl double precision;
        ALTER TABLE postings ADD COLUMN impact real NOT NULL DEFAULT 0;
        CREATE TABLE terms (
            namespace text NOT NULL,
            lexeme text COLLATE "C" NOT NULL,
            df bigint NOT NULL,
            PRIMARY KEY (namespace, lexeme)
        );
        CREATE FUNCTION sidecar_count_terms() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO terms AS t (namespace, lexeme, df)
                SELECT namespace, lexeme, count(*) FROM new_rows GROUP BY namespace, lexeme
                ON CONFLICT (namespace, lexeme) DO UPDATE SET df = t.df + excluded.df;
            ELSE
                UPDATE terms AS t SET df = t.df - d.n
                FROM (SELECT namespace, lexeme, count(*) AS n
                      FROM old_rows GROUP BY namespace, lexeme) AS d
                WHERE t.namespace = d.namespace AND t.lexeme = d.lexeme;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER postings_counted_insert AFTER INSERT ON postings
            REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION sidecar_count_terms();
        CREATE TRIGGER postings_counted_delete AFTER DELETE ON postings
            REFERENCING OLD TABLE AS old_rows
            FOR EACH STATEMENT EXECUTE FUNCTION sidecar_count_terms();
        INSERT INTO terms SELECT namespace, lexeme, count(*) FROM postings
            GROUP BY namespace, lexeme;
        UPDATE namespace_stats SET impact_avgdl = tokens::float8 / nullif(chunks, 0);
        UPDATE postings AS p SET impact = {impact_sql("s.impact_avgdl", "p.")}
            FROM namespace_stats AS s WHERE s.namespace = p.namespace;
        -- Two indexes where there were three: by term in impact order (a top-k walk, and
        -- the exhaustive scan of a term's postings), and by chunk (a top-k probe of a
        -- chunk's terms, a chunk's deletion): the one a build appends to, ids rising.
        CREATE INDEX postings_by_impact ON postings (namespace, lexeme, impact, chunk_id)
            INCLUDE (tf_heading, tf_body, tf_context, doc_len);
        ALTER TABLE postings DROP CONSTRAINT postings_pkey;
        DROP INDEX postings_by_chunk;
        ALTER TABLE postings ADD PRIMARY KEY (namespace, chunk_id, lexeme)
            INCLUDE (tf_heading, tf_body, tf_context, doc_len);
        """,
    ),
    (
        7,
        "block postings: a term's postings packed by impact, deletions as tombstones",
        f"""
        -- Up to BLOCK postings of one term in a row, as parallel arrays, and the highest
        -- impact among them (against namespace_stats.impact_avgdl): a term's rows read by
        -- bound downwards meet its postings in near-impact order, a row per index lookup.
        -- A write appends rows; ``pg_write.merge`` packs a term's small rows together.
        CREATE TABLE blocks (
            namespace text NOT NULL,
            lexeme text COLLATE "C" NOT NULL,
            bound real NOT NULL,
            id bigint GENERATED ALWAYS AS IDENTITY,
            n integer NOT NULL,
            chunk_ids bigint[] NOT NULL,
            tf_heading smallint[] NOT NULL,
            tf_body smallint[] NOT NULL,
            tf_context smallint[] NOT NULL,
            doc_len integer[] NOT NULL,
            PRIMARY KEY (namespace, lexeme, bound, id),
            -- what a search relies on, refused at the door (a hand edit, another program):
            -- parallel arrays of n postings, a bound that is a number
            CHECK (n > 0 AND cardinality(chunk_ids) = n AND cardinality(tf_heading) = n
                   AND cardinality(tf_body) = n AND cardinality(tf_context) = n
                   AND cardinality(doc_len) = n),
            CHECK (bound >= 0 AND bound < 'Infinity')
        );
        -- A full row is about 2.3 kB: kept whole in its page, never compressed nor
        -- moved out of line (decompressing every block read was most of a search's time)
        ALTER TABLE blocks ALTER COLUMN chunk_ids SET STORAGE PLAIN,
            ALTER COLUMN tf_heading SET STORAGE PLAIN, ALTER COLUMN tf_body SET STORAGE PLAIN,
            ALTER COLUMN tf_context SET STORAGE PLAIN, ALTER COLUMN doc_len SET STORAGE PLAIN;
        -- the rows ``merge`` packs together: few, once merged
        CREATE INDEX blocks_small ON blocks (namespace, lexeme) WHERE n < {BLOCK};
        -- Chunks deleted whose postings some block still holds (and their terms):
        -- searches skip them until ``pg_write.merge`` rewrites those blocks.
        CREATE TABLE dead (
            namespace text NOT NULL,
            chunk_id bigint NOT NULL,
            lexemes text[] COLLATE "C" NOT NULL,
            PRIMARY KEY (namespace, chunk_id)
        );
        INSERT INTO blocks (namespace, lexeme, bound, n, {", ".join(_ARRAYS)})
        SELECT s.namespace, b.*
        FROM namespace_stats AS s
        CROSS JOIN LATERAL ({
            _pack_arrays_sql(
                "(SELECT * FROM postings WHERE namespace = s.namespace)",
                "coalesce(s.impact_avgdl, 1)",
            )
        }) AS b;
        -- document frequencies are kept by the writes from now on (``pg_write``)
        DROP TABLE postings;
        DROP FUNCTION sidecar_count_terms();
        """,
    ),
    (
        9,
        "block postings in one bytea each, read as they lie",
        f"""
        DO $do$ BEGIN
            IF current_setting('server_version_num')::int >= 180000 THEN
                EXECUTE $u${postings_function(True)}$u$;
            ELSE
                EXECUTE $u${postings_function(False)}$u$;
            END IF;
        END $do$;
        -- each row rewritten once, the five arrays folded into the first (in place: the
        -- table is shared by every namespace)
        CREATE FUNCTION sidecar_fold(chunk_id bigint[], tf_heading smallint[],
            tf_body smallint[], tf_context smallint[], doc_len integer[]) RETURNS bytea
        LANGUAGE sql IMMUTABLE AS $f$
            SELECT string_agg({POSTING_SQL.format(p="u.")}, ''::bytea ORDER BY u.o)
            FROM unnest(chunk_id, tf_heading, tf_body, tf_context, doc_len)
                 WITH ORDINALITY AS u(chunk_id, tf_heading, tf_body, tf_context, doc_len, o)
        $f$;
        ALTER TABLE blocks
            ALTER COLUMN chunk_ids TYPE bytea
                USING sidecar_fold(chunk_ids, tf_heading, tf_body, tf_context, doc_len),
            DROP COLUMN tf_heading, DROP COLUMN tf_body, DROP COLUMN tf_context,
            DROP COLUMN doc_len;
        DROP FUNCTION sidecar_fold;
        ALTER TABLE blocks RENAME COLUMN chunk_ids TO postings;
        -- kept whole in its page, never compressed nor moved out of line
        ALTER TABLE blocks ALTER COLUMN postings SET STORAGE PLAIN,
            ADD CHECK (n > 0 AND length(postings) = {POSTING} * n);
        """,
    ),
]

# Applied only where the pgvector extension can be created: the chunk's whole-text
# vector as a pgvector value, for nearest-neighbour search in SQL.
PGVECTOR = """
ALTER TABLE vectors ADD COLUMN IF NOT EXISTS dims integer;
ALTER TABLE vectors ADD COLUMN IF NOT EXISTS embedding vector;
"""

LATEST = MIGRATIONS[-1][0]
# Migrations that rewrite every posting (7 packs them into blocks, 9 folds each block's
# arrays into one bytea) under the table's exclusive lock: minutes at a million chunks.
_REWRITES = frozenset({7, 9})


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer sidecar than this one."""


def migrate(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Bring the schema up to date; return whether pgvector is available."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {v for (v,) in conn.execute("SELECT version FROM schema_migrations")}
        newer = [v for v in done if v > LATEST]
        if newer:
            raise SchemaTooNew(
                f"the database schema is at version {max(newer)}, newer than this "
                f"sidecar's {LATEST}: upgrade the sidecar"
            )
        for version, name, sql in MIGRATIONS:
            if version not in done:
                # said before it starts: an operator sees why the sidecar is not serving yet
                log.info(
                    "PostgreSQL schema migration %d (%s)%s", version, name,
                    ": it rewrites every posting under an exclusive lock, and searches and"
                    " writes wait until it ends" if version in _REWRITES else "",
                    extra={"version": version},
                )  # fmt: skip
                conn.execute(sql.encode())
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (version, name),
                )
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(PGVECTOR.encode())
    except psycopg.Error:
        return False  # not installed, or not ours to create: vectors stay bytea
    return True
