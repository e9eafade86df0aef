// PostgreSQL's baseline (version 14): SQLite's logical schema after its migration 14, in one step.
// Append only, like every migration: never edit it (it has shipped).
export const T = 'text COLLATE "C"'

export const BASELINE_SQL = `
  CREATE TABLE accounts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name ${T} NOT NULL UNIQUE,
    password_hash ${T},
    admin bigint NOT NULL DEFAULT 0,
    created bigint NOT NULL,
    disabled bigint,
    last_signin bigint
  );
  CREATE TABLE api_keys (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    prefix ${T} NOT NULL,
    hash ${T} NOT NULL UNIQUE,
    scopes ${T} NOT NULL,
    label ${T} NOT NULL DEFAULT '',
    created bigint NOT NULL,
    last_used bigint,
    revoked bigint
  );
  CREATE INDEX api_keys_account ON api_keys(account_id);
  CREATE TABLE links (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    code ${T} NOT NULL UNIQUE,
    long_url ${T} NOT NULL,
    account_id bigint REFERENCES accounts(id) ON DELETE SET NULL,
    mode ${T} NOT NULL DEFAULT 'redirect',
    password_hash ${T},
    created bigint NOT NULL,
    updated bigint NOT NULL,
    expires bigint,
    clicks bigint NOT NULL DEFAULT 0,
    bots bigint NOT NULL DEFAULT 0,
    disabled ${T}
  );
  CREATE INDEX links_account ON links(account_id, id);
  CREATE TABLE click_days (
    link_id bigint NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    day ${T} NOT NULL,
    clicks bigint NOT NULL DEFAULT 0,
    bots bigint NOT NULL DEFAULT 0,
    dims ${T} NOT NULL DEFAULT '{}',
    PRIMARY KEY (link_id, day)
  );
  CREATE TABLE click_months (
    link_id bigint NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    month ${T} NOT NULL,
    clicks bigint NOT NULL DEFAULT 0,
    bots bigint NOT NULL DEFAULT 0,
    dims ${T} NOT NULL DEFAULT '{}',
    PRIMARY KEY (link_id, month)
  );

  -- Links per owner (0: no account), kept by triggers (SQLite migration 4). The upsert adds, never reads
  -- and writes back, so two nodes creating links at once both count.
  CREATE TABLE link_counts (
    owner bigint PRIMARY KEY,
    links bigint NOT NULL
  );
  CREATE FUNCTION link_counts_add(who bigint, n bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO link_counts (owner, links) VALUES (coalesce(who, 0), n)
      ON CONFLICT (owner) DO UPDATE SET links = link_counts.links + excluded.links
  $$;
  CREATE FUNCTION link_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM link_counts_add(NEW.account_id, 1);
    RETURN NULL;
  END $$;
  CREATE FUNCTION link_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE link_counts SET links = links - 1 WHERE owner = coalesce(OLD.account_id, 0);
    RETURN NULL;
  END $$;
  CREATE FUNCTION link_counts_owner() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE link_counts SET links = links - 1 WHERE owner = coalesce(OLD.account_id, 0);
    PERFORM link_counts_add(NEW.account_id, 1);
    RETURN NULL;
  END $$;
  CREATE FUNCTION link_counts_account_gone() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    DELETE FROM link_counts WHERE owner = OLD.id;
    RETURN NULL;
  END $$;
  CREATE TRIGGER link_counts_insert AFTER INSERT ON links FOR EACH ROW EXECUTE FUNCTION link_counts_insert();
  CREATE TRIGGER link_counts_delete AFTER DELETE ON links FOR EACH ROW EXECUTE FUNCTION link_counts_delete();
  -- Also fired by ON DELETE SET NULL when an account goes (PostgreSQL runs it as an UPDATE of account_id).
  CREATE TRIGGER link_counts_owner AFTER UPDATE OF account_id ON links FOR EACH ROW
    WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id) EXECUTE FUNCTION link_counts_owner();
  CREATE TRIGGER link_counts_account_gone AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION link_counts_account_gone();

  CREATE TABLE mailboxes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    address ${T} NOT NULL UNIQUE,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    created bigint NOT NULL,
    expires bigint NOT NULL,
    messages bigint NOT NULL DEFAULT 0,
    bytes bigint NOT NULL DEFAULT 0
  );
  CREATE INDEX mailboxes_expires ON mailboxes(expires);
  CREATE INDEX mailboxes_account ON mailboxes(account_id);
  CREATE TABLE mail_messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    mailbox_id bigint NOT NULL REFERENCES mailboxes(id) ON DELETE CASCADE,
    blob ${T} NOT NULL,
    received bigint NOT NULL,
    size bigint NOT NULL,
    seen bigint NOT NULL DEFAULT 0,
    envelope_from ${T} NOT NULL,
    from_address ${T} NOT NULL,
    from_name ${T} NOT NULL,
    subject ${T} NOT NULL,
    date bigint,
    intro ${T} NOT NULL,
    attachments bigint NOT NULL,
    parse_error ${T}
  );
  CREATE INDEX mail_messages_mailbox ON mail_messages(mailbox_id, id);
  CREATE INDEX mail_messages_blob ON mail_messages(blob);
  CREATE TABLE mail_attachments (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id bigint NOT NULL REFERENCES mail_messages(id) ON DELETE CASCADE,
    part bigint NOT NULL,
    filename ${T} NOT NULL,
    content_type ${T} NOT NULL,
    size bigint NOT NULL
  );
  CREATE INDEX mail_attachments_message ON mail_attachments(message_id);
  CREATE TABLE mail_inline (
    blob ${T} PRIMARY KEY,
    raw bytea NOT NULL,
    body ${T} NOT NULL
  );
  CREATE TABLE mail_inline_parts (
    blob ${T} NOT NULL,
    part bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (blob, part)
  );
  CREATE FUNCTION mail_inline_gone() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NOT EXISTS (SELECT 1 FROM mail_messages WHERE blob = OLD.blob) THEN
      DELETE FROM mail_inline WHERE blob = OLD.blob;
      DELETE FROM mail_inline_parts WHERE blob = OLD.blob;
    END IF;
    RETURN NULL;
  END $$;
  CREATE FUNCTION mail_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE mailboxes SET messages = messages + 1, bytes = bytes + NEW.size WHERE id = NEW.mailbox_id;
    RETURN NULL;
  END $$;
  CREATE FUNCTION mail_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE mailboxes SET messages = messages - 1, bytes = bytes - OLD.size WHERE id = OLD.mailbox_id;
    RETURN NULL;
  END $$;
  CREATE TRIGGER mail_inline_gone AFTER DELETE ON mail_messages FOR EACH ROW EXECUTE FUNCTION mail_inline_gone();
  CREATE TRIGGER mail_count_insert AFTER INSERT ON mail_messages FOR EACH ROW EXECUTE FUNCTION mail_count_insert();
  CREATE TRIGGER mail_count_delete AFTER DELETE ON mail_messages FOR EACH ROW EXECUTE FUNCTION mail_count_delete();

  CREATE TABLE media_tickets (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    page_url ${T} NOT NULL,
    format_id ${T} NOT NULL,
    method ${T} NOT NULL CHECK (method IN ('direct', 'ytdlp')),
    upstream_url ${T} NOT NULL,
    headers ${T} NOT NULL,
    filename ${T} NOT NULL,
    content_type ${T} NOT NULL,
    created bigint NOT NULL,
    expires bigint NOT NULL
  );
  CREATE INDEX media_tickets_expires ON media_tickets(expires);

  CREATE TABLE webhook_endpoints (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    url ${T} NOT NULL,
    events ${T} NOT NULL,
    secret ${T} NOT NULL,
    enabled bigint NOT NULL DEFAULT 1,
    failing bigint NOT NULL DEFAULT 0,
    disabled_reason ${T},
    created bigint NOT NULL
  );
  CREATE INDEX webhook_endpoints_account ON webhook_endpoints(account_id);
  -- webhook_id: 'msg_' + 32 hex digits, as SQLite's randomblob(16) gives. gen_random_uuid() draws from the
  -- server's strong random source but fixes 6 of its 128 bits; the MD5 of two of them (244 random bits) has
  -- no fixed digit. Uniqueness rests on the 128 bits, as in SQLite (no index).
  CREATE TABLE webhook_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type ${T} NOT NULL,
    created bigint NOT NULL,
    payload ${T} NOT NULL,
    webhook_id ${T} NOT NULL DEFAULT ('msg_' || md5(gen_random_uuid()::text || gen_random_uuid()::text))
  );
  CREATE TABLE webhook_deliveries (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id bigint NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
    endpoint_id bigint NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    state ${T} NOT NULL CHECK (state IN ('pending', 'ok', 'failed')),
    attempts bigint NOT NULL DEFAULT 0,
    next_at bigint NOT NULL,
    last_status bigint,
    last_error ${T},
    last_ms bigint,
    last_at bigint,
    UNIQUE (endpoint_id, event_id)
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_at);
  CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);

  CREATE TABLE web_sessions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash ${T} NOT NULL UNIQUE,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    csrf ${T} NOT NULL,
    created bigint NOT NULL,
    expires bigint NOT NULL,
    last_seen bigint NOT NULL
  );
  CREATE INDEX web_sessions_account ON web_sessions(account_id);
  CREATE INDEX web_sessions_expires ON web_sessions(expires);
  CREATE TABLE form_tokens (
    token ${T} PRIMARY KEY,
    session_id bigint REFERENCES web_sessions(id) ON DELETE CASCADE,
    fingerprint ${T} NOT NULL,
    created bigint NOT NULL,
    result ${T} NOT NULL
  );
  CREATE INDEX form_tokens_created ON form_tokens(created);
  CREATE INDEX form_tokens_session ON form_tokens(session_id);

  CREATE TABLE link_reports (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    link_id bigint REFERENCES links(id) ON DELETE SET NULL,
    code ${T} NOT NULL,
    reason ${T} NOT NULL,
    text ${T} NOT NULL DEFAULT '',
    contact ${T} NOT NULL DEFAULT '',
    created bigint NOT NULL,
    closed bigint,
    action ${T},
    closed_by bigint REFERENCES accounts(id) ON DELETE SET NULL
  );
  CREATE INDEX link_reports_open ON link_reports(closed, id);
  CREATE TABLE banned_hosts (
    host ${T} PRIMARY KEY,
    reason ${T} NOT NULL DEFAULT '',
    created bigint NOT NULL,
    created_by bigint REFERENCES accounts(id) ON DELETE SET NULL
  );
  CREATE TABLE link_tags (
    link_id bigint NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    tag ${T} NOT NULL,
    account_id bigint REFERENCES accounts(id) ON DELETE SET NULL,
    PRIMARY KEY (link_id, tag)
  );
  CREATE INDEX link_tags_account_tag ON link_tags(account_id, tag, link_id);
  CREATE TABLE oidc_identities (
    issuer ${T} NOT NULL,
    sub ${T} NOT NULL,
    account_id bigint NOT NULL UNIQUE REFERENCES accounts(id) ON DELETE CASCADE,
    created bigint NOT NULL,
    last_seen bigint NOT NULL,
    PRIMARY KEY (issuer, sub)
  );
  CREATE TABLE audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at bigint NOT NULL,
    actor_kind ${T} NOT NULL CHECK (actor_kind IN ('account', 'cli', 'anonymous', 'system')),
    actor_id bigint,
    actor_name ${T},
    action ${T} NOT NULL,
    target ${T} NOT NULL DEFAULT '',
    detail ${T} NOT NULL DEFAULT '',
    address ${T} NOT NULL DEFAULT ''
  );
  CREATE INDEX audit_log_at ON audit_log(at);
  CREATE INDEX audit_log_actor ON audit_log(actor_name, id);
  CREATE INDEX audit_log_action ON audit_log(action, id);
  `
