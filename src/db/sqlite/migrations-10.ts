// SQLite migrations 10 and on (the list is migrations.ts): a new migration goes at the end of this one.
import type { Migration } from './migration'

export const migrationsFrom10: Migration[] = [
  /* 10: one-time form tokens (issue 20). A form of the pages that creates something (an API key, a webhook
     endpoint, a link: in the dashboard and on the home page) carries a random token; the creation stores
     it in the transaction that stores the new row, with the page the answer sent the browser to. The same
     form sent again with the same content (a double click, back and send again) finds its token taken:
     nothing is made twice, and the browser goes to that page. Rows go with their session (null: the home
     page's form of a visitor who is not signed in), and after a day. */ `
  CREATE TABLE form_tokens (
    token TEXT PRIMARY KEY,
    session_id INTEGER REFERENCES web_sessions(id) ON DELETE CASCADE,
    fingerprint TEXT NOT NULL,            -- SHA-256 of the form's fields (passwords left out)
    created INTEGER NOT NULL,             -- unix ms
    result TEXT NOT NULL                  -- a path of this site: where the first answer redirected to
  );
  CREATE INDEX form_tokens_created ON form_tokens(created);
  CREATE INDEX form_tokens_session ON form_tokens(session_id);
  `,
  /* 11: abuse handling on the open internet (issue 26, SPEC §3). links.disabled: null while live, else the
     reason an admin gave (visitors get a 451 page; clicks and statistics stay). link_reports: what visitors
     report — no address, no user agent; link_id goes null when the link is deleted, the code stays so the
     report still says what was reported. banned_hosts: destinations an admin banned (a host and its
     subdomains), kept in the database so every node and every restart sees them. */ `
  ALTER TABLE links ADD COLUMN disabled TEXT;
  CREATE TABLE link_reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    link_id INTEGER REFERENCES links(id) ON DELETE SET NULL,
    code TEXT NOT NULL,
    reason TEXT NOT NULL,                 -- phishing | malware | spam | illegal | other
    text TEXT NOT NULL DEFAULT '',        -- the visitor's words, at most 1,000 characters
    contact TEXT NOT NULL DEFAULT '',     -- optional, as given, at most 200 characters
    created INTEGER NOT NULL,             -- unix ms
    closed INTEGER,                       -- unix ms; null while open
    action TEXT,                          -- what closing it did: dismissed | link_disabled | host_banned | account_disabled
    closed_by INTEGER REFERENCES accounts(id) ON DELETE SET NULL
  );
  CREATE INDEX link_reports_open ON link_reports(closed, id);
  CREATE TABLE banned_hosts (
    host TEXT PRIMARY KEY,
    reason TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    created_by INTEGER REFERENCES accounts(id) ON DELETE SET NULL
  ) WITHOUT ROWID;
  `,
  /* 12: a link's tags (issue 23, SPEC §2a), 1-10 per link, each 1-32 of [a-z0-9_-]. account_id is the
     link's owner, copied so that links.json?tag= reads one range of the index (account, tag, newest first)
     however many links other accounts gave the same tag; it goes null with the account, as
     links.account_id does. The rows go with their link. */ `
  CREATE TABLE link_tags (
    link_id INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    account_id INTEGER REFERENCES accounts(id) ON DELETE SET NULL,
    PRIMARY KEY (link_id, tag)
  ) WITHOUT ROWID;
  CREATE INDEX link_tags_account_tag ON link_tags(account_id, tag, link_id);
  `,
  /* 13: single sign-on (issue 25, SPEC §7). An account made by an OpenID provider is linked by the provider's issuer and
     the subject it gives the person (`sub`), never by a name or an e-mail address, which people can change
     or take over there. One link an account at most (UNIQUE account_id); it goes with the account. */ `
  CREATE TABLE oidc_identities (
    issuer TEXT NOT NULL,
    sub TEXT NOT NULL,
    account_id INTEGER NOT NULL UNIQUE REFERENCES accounts(id) ON DELETE CASCADE,
    created INTEGER NOT NULL,             -- unix ms: the first sign-in
    last_seen INTEGER NOT NULL,           -- unix ms: the latest sign-in
    PRIMARY KEY (issuer, sub)
  ) WITHOUT ROWID;
  `,
  /* 14: the audit log (issue 25, SPEC §7): one row per change to
     accounts, keys, webhooks and settings, per sign-in (failed ones too, never the password) and per admin
     action, written in the change's own transaction.
     The actor is kept as it was (kind, account id and name at the time), with no foreign key: the row
     outlives the account. Indexes: time (the date filter and the keep_days sweep), actor and action (the
     filters, newest first by id). accounts.last_signin: unix ms of the last password sign-in (null: never). */ `
  ALTER TABLE accounts ADD COLUMN last_signin INTEGER;
  CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,                  -- unix ms
    actor_kind TEXT NOT NULL CHECK (actor_kind IN ('account', 'cli', 'anonymous', 'system')),
    actor_id INTEGER,                     -- the account's id at the time (kind account); no foreign key
    actor_name TEXT,                      -- its name at the time; 'cli'; the name a failed sign-in tried
    action TEXT NOT NULL,                 -- a stable dotted name: account.create, key.revoke, signin.failed …
    target TEXT NOT NULL DEFAULT '',      -- what it was done to, readable: account "bob" (#3)
    detail TEXT NOT NULL DEFAULT '',      -- more words: scopes, a reason, what went with a deleted account
    address TEXT NOT NULL DEFAULT ''      -- the request's client address; 'cli' for the command line
  );
  CREATE INDEX audit_log_at ON audit_log(at);
  CREATE INDEX audit_log_actor ON audit_log(actor_name, id);
  CREATE INDEX audit_log_action ON audit_log(action, id);
  `,
  /* 15: a lease on a webhook delivery (issue 22, SPEC §11: each event delivered by one node only). A node
     that takes a due delivery writes claimed_until (unix ms, its clock plus the lease) in the same statement
     that picks it; no other node takes it before then. A node that dies mid-delivery gives it back when the
     lease runs out; a recorded result ends the lease (0). The value is also the claim's fence: a result is
     written only while claimed_until is still the one its claim wrote, so a node that comes back after its
     lease ran out cannot overwrite what the next holder records. 0: not claimed. */ `
  ALTER TABLE webhook_deliveries ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0;
  `,
  /* 16: what PostgreSQL mode (issue 22, SPEC §11) keeps in the database that SQLite mode keeps in data_dir.
     Made on SQLite too, and UNUSED there, so that both engines have one schema (test/db/pg-schema.test.ts) and
     `migrate --to` copies table to table; on SQLite a message's bytes stay in data_dir/mail (or mail_inline)
     and the signing key in data_dir/secrets/signing.key.
     mail_bodies: the bytes of a message's blob on PostgreSQL, in chunks of at most 1 MiB (mail/messages-postgres.ts
     says why chunks and not one value or large objects): part -1 the body JSON (text, HTML, recipients, links),
     0 the message as received, n ≥ 1 attachment n (mail_attachments.part), each as seq 0, 1, … in order.
     Written in the transaction that writes the rows naming the blob; removed after the last such row goes.
     secrets: named secrets every node must share; 'signing' is the key of signed links (signing.ts). */ `
  CREATE TABLE mail_bodies (
    blob TEXT NOT NULL,
    part INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (blob, part, seq)
  ) WITHOUT ROWID;
  CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    created INTEGER NOT NULL              -- unix ms
  ) WITHOUT ROWID;
  `,
  /* 17: visit limits, redirect rules and A/B splits (issue 23, SPEC §2a). max_visits: null for no
     limit, else how many human visits the link gives; visits_used: how many it gave while limited, taken
     one at a time by a conditional UPDATE on the visit (so the count is exact however many requests,
     processes or nodes race for the last one). rules and split: null, or the JSON array as validated by
     links/validate.ts (never stored unchecked). */ `
  ALTER TABLE links ADD COLUMN max_visits INTEGER;
  ALTER TABLE links ADD COLUMN visits_used INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE links ADD COLUMN rules TEXT;
  ALTER TABLE links ADD COLUMN split TEXT;
  `,
  /* 18: distinct visitors of a link-day (issue 23, SPEC §4). Counted in memory by a keyed hash of address
     and user agent whose key lives one UTC day and is never written (clicks/visitors.ts); each flush adds
     the visitors that are new since that link-day's last flush, so the column only ever grows by an
     increment (visitors = visitors + ?), the write several nodes can make at once. */ `
  ALTER TABLE click_days ADD COLUMN visitors INTEGER NOT NULL DEFAULT 0;
  `,
  /* 19: nothing on SQLite. PostgreSQL's twin counts a statement's new links per owner once (a statement
     trigger) where its row trigger ran a SQL function, parsed and planned again, for every row: ~55% of the
     server's CPU per creation. SQLite's trigger (4) is a plain statement per row and costs nothing like it. */ `
  SELECT 1;
  `,
  /* 20: what every node must see, not one process's memory (issue 36, SPEC §11). flashes: values carried
     across a redirect (a key or secret shown once, a refused form, the home form's result) and started
     sign-ins, sealed with AES-256-GCM under a key derived from a secret only the browser holds
     (dashboard/flash.ts); id and owner are SHA-256 hashes. pool: 0 sessions', 1 visitors', 2 sign-ins.
     day_keys: the random key of each UTC day that hashes visitors (splits, distinct visitors, daily
     counts), made once by the first node to ask. daily_counts: anonymous creations per keyed hash of the
     client address and UTC day (rate.anon_per_day); never the address. visitor_hashes: the day's visitor
     hashes nodes compare so that a visitor counts once (PostgreSQL only: clicks/shared-visitors.ts). */ `
  CREATE TABLE flashes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    pool INTEGER NOT NULL,
    owner TEXT NOT NULL,
    kind TEXT NOT NULL,
    value BLOB NOT NULL,
    size INTEGER NOT NULL,
    expires INTEGER NOT NULL              -- unix ms
  );
  CREATE INDEX flashes_owner ON flashes (owner);
  CREATE INDEX flashes_pool ON flashes (pool, seq);
  CREATE INDEX flashes_expires ON flashes (expires);
  CREATE TABLE day_keys (
    day INTEGER PRIMARY KEY,              -- UTC day number (unix ms / 86,400,000)
    key BLOB NOT NULL
  );
  CREATE TABLE daily_counts (
    scope TEXT NOT NULL,
    who TEXT NOT NULL,
    day INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (scope, who, day)
  ) WITHOUT ROWID;
  CREATE INDEX daily_counts_day ON daily_counts (day);
  CREATE TABLE visitor_hashes (
    link_id INTEGER NOT NULL,
    day INTEGER NOT NULL,
    hash INTEGER NOT NULL,
    PRIMARY KEY (link_id, day, hash)
  ) WITHOUT ROWID;
  CREATE INDEX visitor_hashes_day ON visitor_hashes (day);
  `,
  /* 21: an import now sends one links.imported event instead of a link.created per link (issue 36): an
     endpoint that listened for link.created keeps hearing of imported links. */ `
  UPDATE webhook_endpoints SET events = events || ',links.imported'
  WHERE ',' || events || ',' LIKE '%,link.created,%' AND ',' || events || ',' NOT LIKE '%,links.imported,%';
  `,
  /* 22: imports (issue 36, SPEC §2a). links.title: 0-200 characters, '' for none (create, update, q=, export,
     import). import_locks: one import at a time per account on every node: a row is the lock, held by
     `holder` (random, per import) until `until` (unix ms, renewed while the import runs), so a node that dies
     mid-import frees the account when its lease runs out. */ `
  ALTER TABLE links ADD COLUMN title TEXT NOT NULL DEFAULT '';
  CREATE TABLE import_locks (
    account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    holder TEXT NOT NULL,
    until INTEGER NOT NULL
  );
  `,
  /* 23: account names compare in any case (issue 36): no new name (or rename) may equal another account's in
     another case (Carol beside carol); the same spelling is the UNIQUE constraint's. A trigger, not a unique
     index on lower(name): a database may hold both spellings from before, and the index would fail this
     migration (and copies of such a database, db/postgres/copy.ts, which switches it off). Names holding ":"
     (the marketplace's made-up ones, accounts/store.ts nameFolds) stay exact. */ `
  CREATE TRIGGER accounts_name_any_case BEFORE INSERT ON accounts
  WHEN instr(NEW.name, ':') = 0 AND EXISTS (SELECT 1 FROM accounts WHERE lower(name) = lower(NEW.name) AND name <> NEW.name)
  BEGIN
    SELECT RAISE(ABORT, 'account name taken in another case');
  END;
  CREATE TRIGGER accounts_name_any_case_update BEFORE UPDATE OF name ON accounts
  WHEN instr(NEW.name, ':') = 0 AND EXISTS (SELECT 1 FROM accounts WHERE lower(name) = lower(NEW.name) AND name <> NEW.name AND id <> NEW.id)
  BEGIN
    SELECT RAISE(ABORT, 'account name taken in another case');
  END;
  `,
  /* 24: the dashboard's import (issue 38): a file uploaded for a preview waits here for its confirmation, on
     any node, until `expires` (unix ms). id: SHA-256 of the id its page's URL carries. state: pending (shown
     for confirmation), running (confirmed: taken once), done (result: the summary's JSON). Bounded per
     account and in bytes (dashboard/import-store.ts). */ `
  CREATE TABLE pending_imports (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    format TEXT NOT NULL,
    body TEXT NOT NULL,
    size INTEGER NOT NULL,
    state TEXT NOT NULL,
    result TEXT,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL
  );
  CREATE INDEX pending_imports_account ON pending_imports (account_id, created);
  CREATE INDEX pending_imports_expires ON pending_imports (expires);
  `,
  /* 25: webhooks you can debug and rotate (issue 38, SPEC §8). An endpoint's previous secret stays valid until
     previous_until (unix ms; 0: none) after a rotation, and deliveries meanwhile are signed with both.
     webhook_attempts: the newest attempt of each delivery as it went (one row per delivery, replaced by the
     next attempt; it goes with its delivery): the URL and the request headers as sent (JSON pairs; the body is
     the event's payload), the answer's status, headers (at most 50, 8 KiB) and the first 4 KiB of its body. */ `
  ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT;
  ALTER TABLE webhook_endpoints ADD COLUMN previous_until INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE webhook_attempts (
    delivery_id INTEGER PRIMARY KEY REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    at INTEGER NOT NULL,
    ms INTEGER NOT NULL,
    url TEXT NOT NULL,
    request_headers TEXT NOT NULL,
    response_status INTEGER,
    response_headers TEXT NOT NULL DEFAULT '[]',
    response_body TEXT NOT NULL DEFAULT '',
    response_truncated INTEGER NOT NULL DEFAULT 0,
    error TEXT
  );
  `,
  {
    /* 26: links past the peers (issue 40, SPEC §2a, §13). A code is unique per domain ('' is the default
       domain, base_url's host), so the table is rebuilt without the UNIQUE on code alone; its AUTOINCREMENT
       counter is carried over, so that an id once given out is never given again. New: expired_url (where an
       expired or used-up link sends people), the social preview's og_title and og_description ('' without) and
       og_image (the stored image's version, its bytes in link_images), meta_due (unix ms: the destination's
       title is still to be fetched; null: nothing to fetch). */
    rebuildsTables: true,
    sql: `
  CREATE TABLE links_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    code TEXT NOT NULL,
    long_url TEXT NOT NULL,
    account_id INTEGER REFERENCES accounts(id) ON DELETE SET NULL,
    mode TEXT NOT NULL DEFAULT 'redirect',
    password_hash TEXT,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    expires INTEGER,
    clicks INTEGER NOT NULL DEFAULT 0,
    bots INTEGER NOT NULL DEFAULT 0,
    disabled TEXT,
    max_visits INTEGER,
    visits_used INTEGER NOT NULL DEFAULT 0,
    rules TEXT,
    split TEXT,
    title TEXT NOT NULL DEFAULT '',
    domain TEXT NOT NULL DEFAULT '',
    expired_url TEXT,
    og_title TEXT NOT NULL DEFAULT '',
    og_description TEXT NOT NULL DEFAULT '',
    og_image TEXT,
    meta_due INTEGER,
    UNIQUE (domain, code)
  );
  INSERT INTO links_new (id, code, long_url, account_id, mode, password_hash, created, updated, expires, clicks, bots,
      disabled, max_visits, visits_used, rules, split, title)
    SELECT id, code, long_url, account_id, mode, password_hash, created, updated, expires, clicks, bots,
      disabled, max_visits, visits_used, rules, split, title FROM links;
  INSERT INTO sqlite_sequence (name, seq) SELECT 'links_carry', seq FROM sqlite_sequence WHERE name = 'links';
  DROP TABLE links;
  ALTER TABLE links_new RENAME TO links;
  UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'links_carry'), 0))
    WHERE name = 'links';
  INSERT INTO sqlite_sequence (name, seq) SELECT 'links', seq FROM sqlite_sequence
    WHERE name = 'links_carry' AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'links');
  DELETE FROM sqlite_sequence WHERE name = 'links_carry';
  CREATE INDEX links_account ON links(account_id, id);
  CREATE INDEX links_meta_due ON links(meta_due) WHERE meta_due IS NOT NULL;
  CREATE TRIGGER link_counts_insert AFTER INSERT ON links BEGIN
    INSERT INTO link_counts (owner, links) VALUES (coalesce(NEW.account_id, 0), 1)
      ON CONFLICT (owner) DO UPDATE SET links = links + 1;
  END;
  CREATE TRIGGER link_counts_delete AFTER DELETE ON links BEGIN
    UPDATE link_counts SET links = links - 1 WHERE owner = coalesce(OLD.account_id, 0);
  END;
  CREATE TRIGGER link_counts_owner AFTER UPDATE OF account_id ON links
    WHEN OLD.account_id IS NOT NEW.account_id BEGIN
    UPDATE link_counts SET links = links - 1 WHERE owner = coalesce(OLD.account_id, 0);
    INSERT INTO link_counts (owner, links) VALUES (coalesce(NEW.account_id, 0), 1)
      ON CONFLICT (owner) DO UPDATE SET links = links + 1;
  END;
  CREATE TABLE link_images (
    link_id INTEGER PRIMARY KEY REFERENCES links(id) ON DELETE CASCADE,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    bytes BLOB NOT NULL
  );
  `,
  },
  /* 27: cookies per site for media download (issue 41): an admin's cookies file for a domain (and its subdomains) or
     an IP address, sealed (AES-256-GCM under a key derived from the signing secret, the site as associated data);
     count, earliest expiry (unix ms; null: session cookies only) and last use are kept beside it in the clear. */ `
  CREATE TABLE media_cookies (
    site TEXT PRIMARY KEY,
    sealed BLOB NOT NULL,
    cookies INTEGER NOT NULL,
    expires INTEGER,
    created INTEGER NOT NULL,
    last_used INTEGER
  );
  `,
  /* 28: the downloads an account started from the dashboard's Download page, its newest 50 (media storage). */ `
  CREATE TABLE media_downloads (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    ticket_id INTEGER NOT NULL,
    page_url TEXT NOT NULL,
    filename TEXT NOT NULL,
    format_id TEXT NOT NULL,
    created INTEGER NOT NULL,
    link_expires INTEGER NOT NULL,
    UNIQUE (account_id, ticket_id)
  );
  CREATE INDEX media_downloads_account ON media_downloads(account_id, created);
  `,
]
