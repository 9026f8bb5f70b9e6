-- What a candidate's relevance score reads besides the vectors (shortlist.talent.evidence).

-- name: query_lexeme_idf
-- The query's lexemes, each with its inverse document frequency among the role titles,
-- headlines and skills of the corpus (weight A of search_tsv; BM25's idf, positive even for a
-- lexeme everyone has). A word nearly everyone has ("engineer") then says little about who
-- fits and a rare one ("recruiting", "fpga") a lot. Counted, not estimated from pg_stats: exact
-- on a fresh corpus, and one GIN lookup per query word. The lexeme is quoted as tsquery input
-- wants it (shortlist_quote_lexeme, migration 0016), so no word is read as an operator.
SELECT t.lexeme,
       ln(1 + (n.total - d.df + 0.5) / (d.df + 0.5)) AS idf
  FROM unnest(to_tsvector('english', %(terms)s)) AS t,
       (SELECT count(*)::float8 AS total FROM candidates) AS n,
       LATERAL (SELECT count(*)::float8 AS df
                  FROM candidates c
                 WHERE c.search_tsv @@ (shortlist_quote_lexeme(t.lexeme) || ':A')::tsquery) AS d
 ORDER BY t.lexeme

-- name: title_match
-- An expression over the candidate row `c`, spliced into search_corpus and relevance_evidence
-- so an internal hit and a backfilled person are measured alike: the idf-weighted share of the
-- query's lexemes (%(lexemes)s, with %(weights)s summing to 1) found in the person's role title
-- and skills. Not the headline: besides the title it names the employer ("… at Ironbark
-- Health"), which says nothing about what the person does.
coalesce((SELECT sum(w.weight)
            FROM unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS w (lexeme, weight)
           WHERE w.lexeme = ANY (tsvector_to_array(
                     to_tsvector('english', c.role_title || ' ' || shortlist_join(c.skills))))),
         0)
