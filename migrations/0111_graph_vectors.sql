-- The model an entity's graph vectors were made with (engine/graph/reembed.py): the
-- embeddings Graphiti stores on entity names and facts. When EMBEDDING_MODEL names
-- another, the graph is re-embedded in the background by `graph_reembed` jobs, a page at
-- a time; each vector made again is marked on its node or edge with its model, in the
-- same write, so a job that stops resumes where the graph says. Meanwhile the entity's
-- fact search answers by words and its extraction waits. A graph from before this
-- migration has no row: a sample of its vectors is compared with the configured model's
-- when it is first needed.
CREATE TABLE graph_vectors (
    entity      TEXT PRIMARY KEY REFERENCES entities(name),
    model       TEXT,      -- the model of every vector not marked with one; NULL: not known
    target      TEXT,      -- being re-embedded with this model; NULL: not
    done        INTEGER NOT NULL DEFAULT 0,   -- vectors of the target model
    total       INTEGER NOT NULL DEFAULT 0,   -- vectors of the graph
    since       TEXT,      -- when the re-embedding began
    updated_at  TEXT NOT NULL
) WITHOUT ROWID;
