-- A lexeme as tsquery input wants it: quoted, its quotes and backslashes doubled, so that no
-- word of a search query is read as a tsquery operator. Job search's narrow/broad split
-- (listings/search.sql, query_words) and the candidates' idf weights (talent/relevance.sql)
-- build their tsqueries from it.
CREATE FUNCTION shortlist_quote_lexeme(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN '''' || replace(replace($1, '\', '\\'), '''', '''''') || '''';
