-- report_cells: what each cell of a study ran with.
-- Inputs: $1 study (VARCHAR); view runs (latest attempts).
-- Outputs: rows (task, model, condition, components, simulated, sources), ordered by task, model,
--   condition: components are the harness components switched on, comma-separated and sorted
--   as run.started records them; simulated is true when any run of the cell used a simulated
--   model; sources counts the distinct source ids (workers or production agents).
SELECT coalesce(task, '') AS task,
       coalesce(model, '') AS model,
       coalesce(condition, '') AS condition,
       coalesce(max(array_to_string(components, ',')), '') AS components,
       coalesce(bool_or(simulated), false) AS simulated,
       count(DISTINCT source_id) AS sources
FROM runs
WHERE study = $1 AND last_attempt
GROUP BY ALL
ORDER BY task, model, condition;
