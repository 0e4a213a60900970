// Package sqlguard runs ad-hoc SQL from users against the analyzer's DuckDB database without
// letting it write, reach files or URLs, or run forever.
//
// # Layers
//
// A query passes four independent checks; each would stop most attacks alone, together they
// leave no single point of failure:
//
//  1. Parse, never bind. DuckDB's own parser (json_serialize_sql, which only parses) must see
//     exactly one SELECT statement. Everything else — INSERT, UPDATE, DELETE, CREATE, DROP,
//     ALTER, COPY, ATTACH, DETACH, INSTALL, LOAD, SET, RESET, PRAGMA, CALL, EXPLAIN, EXPORT,
//     IMPORT, CHECKPOINT, VACUUM, BEGIN, USE, PREPARE, EXECUTE — fails here. The check runs before
//     the query is prepared, because the driver executes every statement but the last of a
//     multi-statement string while preparing it, and binding a replacement scan such as
//     'file.csv' already opens the file.
//  2. Walk the parse tree. Table functions must be on an allowlist of functions that read only
//     DuckDB's own catalog or generate values (range, unnest, duckdb_tables, …) or be a
//     user-defined table macro; read_csv, read_parquet, read_json, read_text, read_blob, glob,
//     query (dynamic SQL), arrow_scan (raw pointers), checkpoint and the logging or profiling
//     switches are refused, as is any function an extension adds later. A few scalar
//     functions with side effects are refused (nextval, write_log). A table name that looks
//     like a path or URL ('runs.csv', 's3://…') is refused: it would be a replacement scan. So
//     is a view with no SQL text, one a program registered over an Arrow stream (the
//     ingester's ingest_batch and ingest_folds): arrow_scan's raw pointers again, possibly
//     freed.
//  3. A read-only transaction. The query runs on its own connection inside BEGIN TRANSACTION
//     READ ONLY, always rolled back: DuckDB itself refuses any write that slipped through.
//  4. No external access. Harden sets enable_external_access=false (no file or URL, no
//     INSTALL or LOAD, no ATTACH of a file), turns extension auto-loading off and then
//     lock_configuration=true, so that nothing can turn them back on. These are global
//     settings of the database instance; the analyzer's own files stay writable, and
//     Harden's allowed directories (the export spool) stay reachable by the analyzer's own
//     COPY statements, which layer 2 never lets a user name.
//
// Layers 1 and 2 give precise refusals (ErrRefused, with the statement or function named);
// layers 3 and 4 are the engine's guarantee when a rule above is incomplete.
//
// # Limits
//
// Every query has a timeout that really stops it: the context's deadline makes DuckDB
// interrupt it (duckdb_interrupt), also while its answer is being read, and the connection is
// rolled back (or discarded). Answers stream (Stream): DuckDB computes a chunk when it is
// fetched and converts it to Arrow itself, so neither DuckDB nor the caller holds the whole
// answer. The row limit is applied to what is read, so it holds for every statement whatever
// its text; the query is also wrapped as SELECT * FROM (query) LIMIT n+1 when that parses, so
// that DuckDB can stop early (wrapping renames duplicate output column names the way DuckDB
// does in a subquery: a, a_1). The byte limit is handed to the encoder of the answer
// (Rows.ByteLimit). At most Config.MaxConcurrent queries run at once, one slot of them kept
// for queries with the default timeout or less; the others wait within their timeout.
package sqlguard
