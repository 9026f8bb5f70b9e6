-- The embedding model is data (shortlist.embedding.spaces): every model space is a row, and its
-- vectors live in columns of their own on each embedded corpus (vector_column, hash_column), so
-- a second model can be built beside the active one while search goes on with the first.
--   active    the model searches embed queries with and read vectors of (exactly one)
--   building  being embedded into by the indexer; becomes active when it covers every row
--   retired   was active; its columns and index are dropped once no process reads them
--   cancelled a build stopped by `shortlist embeddings cancel`; columns dropped
-- Keys are never stored here: they stay in the environment (SHORTLIST_EMBEDDER_API_KEY).
CREATE TABLE embedding_models (
    id            integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- NULL on the row this migration writes for the vectors already stored: the process that
    -- first starts with the table fills them from its settings (SHORTLIST_EMBEDDER, ...).
    kind          text CHECK (kind IN ('local', 'openai')),
    model         text CHECK (length(model) BETWEEN 1 AND 200),
    -- NULL: SHORTLIST_EMBEDDER_URL.
    url           text CHECK (length(url) BETWEEN 1 AND 2000),
    dim           integer NOT NULL CHECK (dim BETWEEN 1 AND 16000),
    state         text NOT NULL CHECK (state IN ('active', 'building', 'retired', 'cancelled')),
    vector_column text NOT NULL UNIQUE CHECK (vector_column ~ '^embedding(_m[0-9]+)?$'),
    hash_column   text NOT NULL UNIQUE CHECK (hash_column ~ '^embedded_hash(_m[0-9]+)?$'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    activated_at  timestamptz,
    retired_at    timestamptz,
    -- When the space's columns and index were dropped (retired or cancelled spaces).
    dropped_at    timestamptz,
    CONSTRAINT adopted_unless_first CHECK (kind IS NOT NULL OR vector_column = 'embedding'),
    CONSTRAINT retired_when CHECK (state NOT IN ('retired', 'cancelled') OR retired_at IS NOT NULL)
);

-- One active model, at most one build at a time.
CREATE UNIQUE INDEX embedding_models_one_active ON embedding_models ((true))
    WHERE state = 'active';
CREATE UNIQUE INDEX embedding_models_one_building ON embedding_models ((true))
    WHERE state = 'building';

-- The vectors stored so far: their dimension is the column's type modifier.
INSERT INTO embedding_models (dim, state, vector_column, hash_column, activated_at)
SELECT atttypmod, 'active', 'embedding', 'embedded_hash', now()
  FROM pg_attribute
 WHERE attrelid = 'job_listings'::regclass AND attname = 'embedding';

-- A search's query vector is of the model active when it started (embedding_model_id); the
-- column loses its fixed dimension so a search can be embedded by any model.
ALTER TABLE searches ALTER COLUMN query_embedding TYPE vector;
ALTER TABLE searches ADD COLUMN embedding_model_id integer REFERENCES embedding_models (id);
UPDATE searches SET embedding_model_id = (SELECT id FROM embedding_models WHERE state = 'active');

-- Keeps `shortlist embeddings status` and every process's reload in step: NOTIFY on change.
CREATE FUNCTION embedding_models_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_embedding_models', '');
    RETURN NULL;
END $$;
CREATE TRIGGER embedding_models_notify AFTER INSERT OR UPDATE OR DELETE ON embedding_models
    FOR EACH STATEMENT EXECUTE FUNCTION embedding_models_notify();
