-- What a shopper is shown of a template (issue 28): a logo URL, a
-- category, the goods or product lines it is for (a JSON array of
-- strings, '' read as none), the usage instructions (使用说明) and free
-- metadata (a JSON object of strings, '' read as none). TEXT columns
-- cannot have a literal default before MySQL 8.0.13: rows stored before
-- get the implicit '' and every INSERT writes them.
ALTER TABLE templates
	ADD COLUMN logo_url     VARCHAR(1024) NOT NULL DEFAULT '',
	ADD COLUMN category     VARCHAR(64)   NOT NULL DEFAULT '',
	ADD COLUMN goods        TEXT          NOT NULL,
	ADD COLUMN instructions TEXT          NOT NULL,
	ADD COLUMN metadata     TEXT          NOT NULL;

-- The claim centre and the shoppers' search read the active templates of
-- every shop, newest first, page by page (WHERE status = ? AND id < ?
-- ORDER BY id DESC), or of one category. InnoDB appends the primary key.
CREATE INDEX templates_status_id ON templates (status);
CREATE INDEX templates_category_status_id ON templates (category, status);
