// The PostgreSQL schema, numbered like SQLite's (db/sqlite/migrations.ts): a baseline at 14, then a twin of each
// later SQLite migration, in the same commit. Append only. test/db/pg-schema.test.ts compares the two schemas.
import { BASELINE_SQL, T } from './baseline'

export interface PgMigration {
  /** The SQLite schema version this brings a PostgreSQL database to (db/sqlite/migrations.ts numbering). */
  version: number
  sql: string
}

export const pgMigrations: PgMigration[] = [
  { version: 14, sql: BASELINE_SQL },
  {
    // SQLite migration 15: the lease of a webhook delivery (claimed_until, unix ms; 0: not claimed).
    version: 15,
    sql: `ALTER TABLE webhook_deliveries ADD COLUMN claimed_until bigint NOT NULL DEFAULT 0;`,
  },
  {
    // Twin of SQLite's 16: a message's bytes in chunks, and the shared secrets (used on this engine only).
    version: 16,
    sql: `
  CREATE TABLE mail_bodies (
    blob ${T} NOT NULL,
    part bigint NOT NULL,
    seq bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (blob, part, seq)
  );
  CREATE TABLE secrets (
    name ${T} PRIMARY KEY,
    value bytea NOT NULL,
    created bigint NOT NULL
  );
  `,
  },
  {
    // Twin of SQLite's 17: a link's visit limit, the visits it gave, its rules and split (validated JSON text).
    version: 17,
    sql: `
  ALTER TABLE links ADD COLUMN max_visits bigint;
  ALTER TABLE links ADD COLUMN visits_used bigint NOT NULL DEFAULT 0;
  ALTER TABLE links ADD COLUMN rules ${T};
  ALTER TABLE links ADD COLUMN split ${T};
  `,
  },
  {
    // Twin of SQLite's 18: the distinct visitors of a link-day, only ever added to (visitors = visitors + n).
    version: 18,
    sql: `ALTER TABLE click_days ADD COLUMN visitors bigint NOT NULL DEFAULT 0;`,
  },
  {
    // Twin of SQLite's 19 (a no-op there): new links are counted per owner once a statement, from its
    // transition table, not once a row. The row trigger called link_counts_add, a SQL function PostgreSQL
    // parses and plans again at every call: perf of the server put ~55% of a creation's CPU there (a group
    // of ~32 creations is one INSERT). Owners in ascending order, as the creations lock them (storage-postgres.ts).
    version: 19,
    sql: `
  CREATE FUNCTION link_counts_insert_rows() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO link_counts (owner, links)
      SELECT coalesce(account_id, 0), count(*) FROM new_links GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner) DO UPDATE SET links = link_counts.links + excluded.links;
    RETURN NULL;
  END $$;
  DROP TRIGGER link_counts_insert ON links;
  DROP FUNCTION link_counts_insert();
  CREATE TRIGGER link_counts_insert AFTER INSERT ON links REFERENCING NEW TABLE AS new_links
    FOR EACH STATEMENT EXECUTE FUNCTION link_counts_insert_rows();
  `,
  },
  {
    // Twin of SQLite's 20: flashes and started sign-ins (sealed), the day keys, the daily counts.
    version: 20,
    sql: `
  CREATE TABLE flashes (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id ${T} NOT NULL UNIQUE,
    pool bigint NOT NULL,
    owner ${T} NOT NULL,
    kind ${T} NOT NULL,
    value bytea NOT NULL,
    size bigint NOT NULL,
    expires bigint NOT NULL
  );
  CREATE INDEX flashes_owner ON flashes (owner);
  CREATE INDEX flashes_pool ON flashes (pool, seq);
  CREATE INDEX flashes_expires ON flashes (expires);
  CREATE TABLE day_keys (
    day bigint PRIMARY KEY,
    key bytea NOT NULL
  );
  CREATE TABLE daily_counts (
    scope ${T} NOT NULL,
    who ${T} NOT NULL,
    day bigint NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (scope, who, day)
  );
  CREATE INDEX daily_counts_day ON daily_counts (day);
  CREATE TABLE visitor_hashes (
    link_id bigint NOT NULL,
    day bigint NOT NULL,
    hash bigint NOT NULL,
    PRIMARY KEY (link_id, day, hash)
  );
  CREATE INDEX visitor_hashes_day ON visitor_hashes (day);
  `,
  },
  {
    // Twin of SQLite's 21: endpoints that listened for link.created hear of imports (links.imported).
    version: 21,
    sql: `
  UPDATE webhook_endpoints SET events = events || ',links.imported'
  WHERE ',' || events || ',' LIKE '%,link.created,%' AND ',' || events || ',' NOT LIKE '%,links.imported,%';
  `,
  },
  {
    // Twin of SQLite's 22: a link's title ('' for none), and the per-account import lock (a leased row).
    version: 22,
    sql: `
  ALTER TABLE links ADD COLUMN title ${T} NOT NULL DEFAULT '';
  CREATE TABLE import_locks (
    account_id bigint PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    holder ${T} NOT NULL,
    until bigint NOT NULL
  );
  `,
  },
  {
    // Twin of SQLite's 23: no new name (or rename) equal to another account's in another case. Under the
    // account names' advisory lock (accounts/storage-postgres.ts ACCOUNT_NAME_LOCK_CLASS, "name"), held to the
    // commit, so that two nodes making Carol and carol at once take turns and the second sees the first.
    version: 23,
    sql: `
  CREATE FUNCTION accounts_name_any_case() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF position(':' in NEW.name) = 0 THEN
      PERFORM pg_advisory_xact_lock(1851878757, hashtext(lower(NEW.name)));
      IF EXISTS (SELECT 1 FROM accounts WHERE lower(name) = lower(NEW.name) AND name <> NEW.name AND id <> NEW.id) THEN
        RAISE EXCEPTION 'account name taken in another case' USING ERRCODE = 'unique_violation';
      END IF;
    END IF;
    RETURN NEW;
  END $$;
  CREATE TRIGGER accounts_name_any_case BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION accounts_name_any_case();
  CREATE TRIGGER accounts_name_any_case_update BEFORE UPDATE OF name ON accounts FOR EACH ROW EXECUTE FUNCTION accounts_name_any_case();
  `,
  },
  {
    // Twin of SQLite's 24: the dashboard's imports waiting for their confirmation (and their summaries).
    version: 24,
    sql: `
  CREATE TABLE pending_imports (
    id ${T} PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name ${T} NOT NULL,
    format ${T} NOT NULL,
    body ${T} NOT NULL,
    size bigint NOT NULL,
    state ${T} NOT NULL,
    result ${T},
    created bigint NOT NULL,
    expires bigint NOT NULL
  );
  CREATE INDEX pending_imports_account ON pending_imports (account_id, created);
  CREATE INDEX pending_imports_expires ON pending_imports (expires);
  `,
  },
  {
    // Twin of SQLite's 25: an endpoint's previous secret and until when it is valid; each delivery's newest attempt.
    version: 25,
    sql: `
  ALTER TABLE webhook_endpoints ADD COLUMN previous_secret ${T};
  ALTER TABLE webhook_endpoints ADD COLUMN previous_until bigint NOT NULL DEFAULT 0;
  CREATE TABLE webhook_attempts (
    delivery_id bigint PRIMARY KEY REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempt bigint NOT NULL,
    at bigint NOT NULL,
    ms bigint NOT NULL,
    url ${T} NOT NULL,
    request_headers ${T} NOT NULL,
    response_status bigint,
    response_headers ${T} NOT NULL DEFAULT '[]',
    response_body ${T} NOT NULL DEFAULT '',
    response_truncated bigint NOT NULL DEFAULT 0,
    error ${T}
  );
  `,
  },
  {
    // Twin of SQLite's 26: a code unique per domain ('' the default); where expired links go; the social preview
    // (its image's bytes in link_images); meta_due: the destination's title still to fetch.
    version: 26,
    sql: `
  ALTER TABLE links ADD COLUMN domain ${T} NOT NULL DEFAULT '';
  ALTER TABLE links DROP CONSTRAINT IF EXISTS links_code_key;
  CREATE UNIQUE INDEX links_domain_code ON links (domain, code);
  ALTER TABLE links ADD COLUMN expired_url ${T};
  ALTER TABLE links ADD COLUMN og_title ${T} NOT NULL DEFAULT '';
  ALTER TABLE links ADD COLUMN og_description ${T} NOT NULL DEFAULT '';
  ALTER TABLE links ADD COLUMN og_image ${T};
  ALTER TABLE links ADD COLUMN meta_due bigint;
  CREATE INDEX links_meta_due ON links (meta_due) WHERE meta_due IS NOT NULL;
  CREATE TABLE link_images (
    link_id bigint PRIMARY KEY REFERENCES links(id) ON DELETE CASCADE,
    version ${T} NOT NULL,
    type ${T} NOT NULL,
    width bigint NOT NULL,
    height bigint NOT NULL,
    bytes bytea NOT NULL
  );
  `,
  },
  {
    // Twin of SQLite's 27: cookies per site for media download, sealed (media/cookies.ts).
    version: 27,
    sql: `
  CREATE TABLE media_cookies (
    site ${T} PRIMARY KEY,
    sealed bytea NOT NULL,
    cookies bigint NOT NULL,
    expires bigint,
    created bigint NOT NULL,
    last_used bigint
  );
  `,
  },
  {
    // Twin of SQLite's 28: the downloads an account started from the dashboard's Download page, its newest 50.
    version: 28,
    sql: `
  CREATE TABLE media_downloads (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    ticket_id bigint NOT NULL,
    page_url ${T} NOT NULL,
    filename ${T} NOT NULL,
    format_id ${T} NOT NULL,
    created bigint NOT NULL,
    link_expires bigint NOT NULL,
    UNIQUE (account_id, ticket_id)
  );
  CREATE INDEX media_downloads_account ON media_downloads (account_id, created);
  `,
  },
]

/** The schema version this binary brings a PostgreSQL database to: the last entry's. */
export const PG_SCHEMA_VERSION = pgMigrations[pgMigrations.length - 1]!.version
