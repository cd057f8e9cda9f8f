-- Layer 5, inventory: what an entity has (wardrobe, symbols, people) and the spaces it
-- moves through. Categorical lookups; the story of each thing lives in the graph.
CREATE TABLE spaces (
    id           INTEGER PRIMARY KEY,
    entity       TEXT NOT NULL REFERENCES entities(name),
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',   -- markdown
    channel      TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (entity, name)
);

CREATE TABLE inventory_items (
    id           INTEGER PRIMARY KEY,
    entity       TEXT NOT NULL REFERENCES entities(name),
    name         TEXT NOT NULL,
    category     TEXT NOT NULL,
    subcategory  TEXT,
    description  TEXT NOT NULL DEFAULT '',
    attributes   TEXT NOT NULL DEFAULT '{}',  -- JSON object
    space_id     INTEGER REFERENCES spaces(id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (entity, category, name)
);

CREATE INDEX inventory_by_category ON inventory_items (entity, category, subcategory, name);
CREATE INDEX inventory_by_space ON inventory_items (space_id);

-- Where the entity is now, per channel (a terminal self and a Discord self can be in
-- different rooms).
CREATE TABLE current_spaces (
    entity      TEXT NOT NULL REFERENCES entities(name),
    channel     TEXT NOT NULL,
    space_id    INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    entered_at  TEXT NOT NULL,
    PRIMARY KEY (entity, channel)
) WITHOUT ROWID;
