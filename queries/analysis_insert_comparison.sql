-- analysis_insert_comparison: store one comparison.
-- Inputs: $1 study, $2 task, $3 model, $4 condition_a, $5 condition_b, $6 quantity, $7 test,
--   $8 method (VARCHAR or NULL), $9 n_a, $10 n_b (BIGINT), $11 value_a, $12 value_b,
--   $13 difference, $14 statistic, $15 effect_size, $16 p, $17 p_adjusted (DOUBLE or NULL),
--   $18 significant (BOOLEAN), $19 note, $20 reason (VARCHAR or NULL), $21 p_se (DOUBLE or NULL).
-- Outputs: one row of table comparisons.
INSERT INTO comparisons (study, task, model, condition_a, condition_b, quantity, test, method,
                         n_a, n_b, value_a, value_b, difference, statistic, effect_size, p,
                         p_adjusted, significant, note, reason, p_se)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21);
