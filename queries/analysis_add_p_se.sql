-- analysis_add_p_se: add column p_se to a comparisons table created before it existed.
-- Inputs: none (DDL); table comparisons (analysis_table_comparisons).
-- Outputs: column p_se (DOUBLE), NULL in the rows already there; nothing when it exists.
ALTER TABLE comparisons ADD COLUMN IF NOT EXISTS p_se DOUBLE;
