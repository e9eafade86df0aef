// Append only: never edit a migration that has shipped; add a new one.
export const migrations: string[] = [
  /* 1: accounts, keys, links, click aggregates */ `
  CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    password_hash TEXT,
    admin INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL
  );
  CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    prefix TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    scopes TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    last_used INTEGER,
    revoked INTEGER
  );
  CREATE INDEX api_keys_account ON api_keys(account_id);
  CREATE TABLE links (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    long_url TEXT NOT NULL,
    account_id INTEGER REFERENCES accounts(id) ON DELETE SET NULL,
    mode TEXT NOT NULL DEFAULT 'redirect',
    password_hash TEXT,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    expires INTEGER,
    clicks INTEGER NOT NULL DEFAULT 0,
    bots INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX links_account ON links(account_id, id);
  -- Daily aggregates: the cost of statistics depends on days and distinct names, never on clicks.
  CREATE TABLE click_days (
    link_id INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    day TEXT NOT NULL,
    clicks INTEGER NOT NULL DEFAULT 0,
    bots INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (link_id, day)
  ) WITHOUT ROWID;
  CREATE TABLE click_dims (
    link_id INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    day TEXT NOT NULL,
    dim TEXT NOT NULL,
    name TEXT NOT NULL,
    clicks INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (link_id, day, dim, name)
  ) WITHOUT ROWID;
  `,
]
