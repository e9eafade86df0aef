// SQLite migrations 1-9 (the list is migrations.ts). Append only: never edit a migration that has shipped.
import type { Migration } from './migration'

export const migrationsFrom1: Migration[] = [
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
  /* 2: row ids are never reused (AUTOINCREMENT). A plain INTEGER PRIMARY KEY hands the highest id out
     again once its row is deleted, and these ids are keys elsewhere: click aggregates and buffered clicks
     (links), the owner of links and keys (accounts), rate-limit buckets and last-used times held in memory
     (api_keys). A request that read a row before the delete must never reach a newer row by its id.
     Every row keeps its id; sqlite_sequence starts at the highest id present. Columns keep their order
     (the stores read SELECT * / RETURNING *). */ {
    rebuildsTables: true,
    sql: `
  CREATE TABLE accounts_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    password_hash TEXT,
    admin INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL
  );
  INSERT INTO accounts_new (id, name, password_hash, admin, created)
    SELECT id, name, password_hash, admin, created FROM accounts;
  DROP TABLE accounts;
  ALTER TABLE accounts_new RENAME TO accounts;

  CREATE TABLE api_keys_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    prefix TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    scopes TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    last_used INTEGER,
    revoked INTEGER
  );
  INSERT INTO api_keys_new (id, account_id, prefix, hash, scopes, label, created, last_used, revoked)
    SELECT id, account_id, prefix, hash, scopes, label, created, last_used, revoked FROM api_keys;
  DROP TABLE api_keys;
  ALTER TABLE api_keys_new RENAME TO api_keys;
  CREATE INDEX api_keys_account ON api_keys(account_id);

  CREATE TABLE links_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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
  INSERT INTO links_new (id, code, long_url, account_id, mode, password_hash, created, updated, expires, clicks, bots)
    SELECT id, code, long_url, account_id, mode, password_hash, created, updated, expires, clicks, bots FROM links;
  DROP TABLE links;
  ALTER TABLE links_new RENAME TO links;
  CREATE INDEX links_account ON links(account_id, id);
  `,
  },
  /* 3: click storage that a flush and a year's answer can afford (issue 7). A link-day's breakdowns move
     from one row per name (click_dims: a flush wrote a row per name, an answer summed every name of every
     day) into one JSON column of its click_days row; click_months adds up each month's days, so a window
     of a year reads twelve months and the days at its edges. A month keeps its 200 busiest names. */ `
  ALTER TABLE click_days ADD COLUMN dims TEXT NOT NULL DEFAULT '{}';
  CREATE TEMP TABLE dims_by_day AS
    SELECT link_id, day, json_group_object(dim, json(names)) AS dims FROM (
      SELECT link_id, day, dim, json_group_object(name, clicks) AS names FROM click_dims GROUP BY link_id, day, dim
    ) GROUP BY link_id, day;
  CREATE UNIQUE INDEX temp.dims_by_day_key ON dims_by_day (link_id, day);
  UPDATE click_days SET dims = coalesce(
    (SELECT d.dims FROM temp.dims_by_day d WHERE d.link_id = click_days.link_id AND d.day = click_days.day), '{}');
  DROP TABLE temp.dims_by_day;

  CREATE TABLE click_months (
    link_id INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    month TEXT NOT NULL,
    clicks INTEGER NOT NULL DEFAULT 0,
    bots INTEGER NOT NULL DEFAULT 0,
    dims TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (link_id, month)
  ) WITHOUT ROWID;
  INSERT INTO click_months (link_id, month, clicks, bots, dims)
    SELECT c.link_id, c.month, c.clicks, c.bots, coalesce(n.dims, '{}') FROM (
      SELECT link_id, substr(day, 1, 7) AS month, sum(clicks) AS clicks, sum(bots) AS bots FROM click_days GROUP BY 1, 2
    ) c LEFT JOIN (
      SELECT link_id, month, json_group_object(dim, json(names)) AS dims FROM (
        SELECT link_id, month, dim, json_group_object(name, clicks) AS names FROM (
          -- A month keeps its 200 busiest names (clicks/store.ts MONTH_NAMES); the rest go to 'other'.
          SELECT link_id, month, dim, iif(rank <= 200 AND name <> 'other', name, 'other') AS name, sum(clicks) AS clicks FROM (
            SELECT *, row_number() OVER (PARTITION BY link_id, month, dim ORDER BY name = 'other', clicks DESC, name) AS rank FROM (
              SELECT link_id, substr(day, 1, 7) AS month, dim, name, sum(clicks) AS clicks FROM click_dims GROUP BY 1, 2, 3, 4
            )
          ) GROUP BY 1, 2, 3, 4
        ) GROUP BY 1, 2, 3
      ) GROUP BY 1, 2
    ) n USING (link_id, month);
  DROP TABLE click_dims;
  `,
  /* 4: how many links each account has, kept by triggers, so that links.json and /metrics read one row
     instead of counting (a count(*) over 100,000 links took 4.7 ms a page; the page itself 0.07 ms).
     Triggers rather than code, so that no path can forget it: inserts, deletes, and the ON DELETE SET
     NULL that an account's deletion does to its links (an UPDATE, which fires the UPDATE trigger).
     owner is the account id, 0 for links without an account (ids start at 1). A rebuild of "links" in a
     later migration drops these triggers with the table and must create them again. */ `
  CREATE TABLE link_counts (
    owner INTEGER PRIMARY KEY,
    links INTEGER NOT NULL
  );
  INSERT INTO link_counts (owner, links) SELECT coalesce(account_id, 0), count(*) FROM links GROUP BY 1;
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
  -- One row per account at most: a deleted account's row goes with it (its links moved to owner 0 above).
  CREATE TRIGGER link_counts_account_gone AFTER DELETE ON accounts BEGIN
    DELETE FROM link_counts WHERE owner = OLD.id;
  END;
  `,
  /* 5: temporary mail (issue 8). A mailbox belongs to one account; its messages and their attachments go
     with it (ON DELETE CASCADE). The bytes of a message (its blob) live in files under data_dir/mail/<blob>/
     (raw.eml, body.json with the text, HTML, recipients and links, one file per attachment), or for a small
     message in mail_inline; several mailboxes of one delivery share a blob, removed once no row names it. A message to 50 mailboxes is stored once, and a row holds
     only what a list shows.
     AUTOINCREMENT: an id is never given twice, so a signed link or an `after` cursor can never come to
     name another message after a deletion. */ `
  CREATE TABLE mailboxes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    address TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL,
    messages INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX mailboxes_expires ON mailboxes(expires);
  CREATE INDEX mailboxes_account ON mailboxes(account_id);
  CREATE TABLE mail_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    mailbox_id INTEGER NOT NULL REFERENCES mailboxes(id) ON DELETE CASCADE,
    blob TEXT NOT NULL,
    received INTEGER NOT NULL,
    size INTEGER NOT NULL,
    seen INTEGER NOT NULL DEFAULT 0,
    envelope_from TEXT NOT NULL,
    from_address TEXT NOT NULL,
    from_name TEXT NOT NULL,
    subject TEXT NOT NULL,
    date INTEGER,
    intro TEXT NOT NULL,
    attachments INTEGER NOT NULL,
    parse_error TEXT
  );
  CREATE INDEX mail_messages_mailbox ON mail_messages(mailbox_id, id);
  CREATE INDEX mail_messages_blob ON mail_messages(blob);
  CREATE TABLE mail_attachments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL REFERENCES mail_messages(id) ON DELETE CASCADE,
    part INTEGER NOT NULL,
    filename TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL
  );
  CREATE INDEX mail_attachments_message ON mail_attachments(message_id);
  -- A small message (raw, body and attachments under 256 KiB together) is kept here instead of in files: the
  -- commit that stores its rows stores its bytes, and one fsync of the WAL covers a whole group of messages
  -- (files cost three fsyncs each, which the disk does one at a time). Removed with the last row naming it.
  CREATE TABLE mail_inline (
    blob TEXT PRIMARY KEY,
    raw BLOB NOT NULL,
    body TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE mail_inline_parts (
    blob TEXT NOT NULL,
    part INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (blob, part)
  ) WITHOUT ROWID;
  CREATE TRIGGER mail_inline_gone AFTER DELETE ON mail_messages
    WHEN NOT EXISTS (SELECT 1 FROM mail_messages WHERE blob = OLD.blob) BEGIN
    DELETE FROM mail_inline WHERE blob = OLD.blob;
    DELETE FROM mail_inline_parts WHERE blob = OLD.blob;
  END;
  -- The count and bytes of a mailbox, kept by triggers: RCPT checks "full" with one row, /metrics reads sums.
  CREATE TRIGGER mail_count_insert AFTER INSERT ON mail_messages BEGIN
    UPDATE mailboxes SET messages = messages + 1, bytes = bytes + NEW.size WHERE id = NEW.mailbox_id;
  END;
  CREATE TRIGGER mail_count_delete AFTER DELETE ON mail_messages BEGIN
    UPDATE mailboxes SET messages = messages - 1, bytes = bytes - OLD.size WHERE id = OLD.mailbox_id;
  END;
  `,
  /* 6: media download tickets (issue 9). A signed /dl/<id> link names a ticket: what to fetch (the upstream
     URL and the headers yt-dlp said to send, or the page and format for yt-dlp to fetch itself when the
     format is segmented or merged) and the file name to offer. Kept here, not in the link, so the upstream
     URL (often bound to the extracting address, sometimes carrying cookies) never leaves the server, and so
     links survive a restart. AUTOINCREMENT: an id is never given twice, so an old link cannot come to
     name another file. Swept once `expires` (the last moment any link to it can be valid) has passed. */ `
  CREATE TABLE media_tickets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    page_url TEXT NOT NULL,
    format_id TEXT NOT NULL,
    method TEXT NOT NULL CHECK (method IN ('direct', 'ytdlp')),
    upstream_url TEXT NOT NULL,
    headers TEXT NOT NULL,
    filename TEXT NOT NULL,
    content_type TEXT NOT NULL,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL
  );
  CREATE INDEX media_tickets_expires ON media_tickets(expires);
  `,
  /* 7: webhooks (issue 10). Endpoints per account; an event is one webhook_events row plus one pending
     webhook_deliveries row per subscribed endpoint, written in the transaction of the change that caused it
     (the outbox), so a crash neither loses an event nor sends one for a change that was rolled back. The
     deliverer works the due rows (state, next_at); the event's id is its webhook-id ('msg_' || id; since migration 9 a random one on the row), so a
     retry or a redelivery never gets another one. */ `
  CREATE TABLE webhook_endpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    events TEXT NOT NULL,                 -- comma-separated event types, e.g. 'link.created,mail.received'
    secret TEXT NOT NULL,                 -- 'whsec_' + base64 of 24 random bytes (Standard Webhooks)
    enabled INTEGER NOT NULL DEFAULT 1,
    failing INTEGER NOT NULL DEFAULT 0,   -- 1 once a delivery used up its retries; 0 again after a success
    disabled_reason TEXT,                 -- why enabled = 0 (e.g. 'the receiver answered 410 Gone')
    created INTEGER NOT NULL              -- unix ms
  );
  CREATE INDEX webhook_endpoints_account ON webhook_endpoints(account_id);
  CREATE TABLE webhook_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, -- the webhook-id header is 'msg_' || id: one event, one id, forever
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    created INTEGER NOT NULL,             -- unix ms
    payload TEXT NOT NULL                 -- the exact body sent: {"type":…,"timestamp":"<ISO>","data":{…}}
  );
  CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id INTEGER NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
    endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    state TEXT NOT NULL CHECK (state IN ('pending', 'ok', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,             -- unix ms: when a pending delivery is due
    last_status INTEGER,                  -- HTTP status of the last attempt (null: no answer)
    last_error TEXT,                      -- short text of the last failure
    last_ms INTEGER,                      -- response time of the last attempt
    last_at INTEGER,                      -- when the last attempt ended
    UNIQUE (endpoint_id, event_id)
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_at);
  CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
  `,
  /* 8: the dashboard. A signed-in browser holds a random session token in an HttpOnly cookie; only its
     SHA-256 is stored, with the session's CSRF token (every form of the session carries it). AUTOINCREMENT:
     a session id is never reused. accounts.disabled (unix ms, null: active) is set by an admin: the
     account's keys stop working and its sessions are deleted. */ `
  ALTER TABLE accounts ADD COLUMN disabled INTEGER;
  CREATE TABLE web_sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL,
    last_seen INTEGER NOT NULL
  );
  CREATE INDEX web_sessions_account ON web_sessions(account_id);
  CREATE INDEX web_sessions_expires ON web_sessions(expires);
  `,
  /* 9: an event's webhook-id is random, stored on its row (issue 20, SPEC §9). 'msg_' || id repeated itself
     after a restore: the events made after the backup were gone, the row ids came round again, and the next
     event went out under an id its receivers had seen (and dropped it as a duplicate). Now every new row gets
     'msg_' + 32 hex digits (128 random bits) from the column's default, so no path that inserts an event can
     forget it or compute it; uniqueness rests on the 128 bits, as for keys and session tokens, not on an
     index the click writer would pay for on every event. Rows already there keep 'msg_' || id, what they
     were (or will be) sent under, so a retry after the upgrade still carries the old id. A DEFAULT that is
     an expression needs the table rebuilt (ALTER TABLE … ADD COLUMN allows only constants); sqlite_sequence
     is carried over first, so that an event id, which the delivery log and redelivery name, is never given
     twice either. Columns keep their order; webhook_id comes last. */ {
    rebuildsTables: true,
    sql: `
  CREATE TABLE webhook_events_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    created INTEGER NOT NULL,             -- unix ms
    payload TEXT NOT NULL,                -- the exact body sent: {"type":…,"timestamp":"<ISO>","data":{…}}
    webhook_id TEXT NOT NULL DEFAULT ('msg_' || lower(hex(randomblob(16)))) -- the webhook-id header, every attempt
  );
  INSERT INTO sqlite_sequence (name, seq) SELECT 'webhook_events_new', seq FROM sqlite_sequence WHERE name = 'webhook_events';
  INSERT INTO webhook_events_new (id, account_id, type, created, payload, webhook_id)
    SELECT id, account_id, type, created, payload, 'msg_' || id FROM webhook_events;
  DROP TABLE webhook_events;
  ALTER TABLE webhook_events_new RENAME TO webhook_events;
  `,
  },
]
