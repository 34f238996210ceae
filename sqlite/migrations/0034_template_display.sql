-- What a shopper is shown of a template (issue 28): a logo URL, a
-- category, the goods or product lines it is for (a JSON array of
-- strings), the usage instructions (使用说明) and free metadata (a JSON
-- object of strings).
ALTER TABLE templates ADD COLUMN logo_url     TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN category     TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN goods        TEXT NOT NULL DEFAULT '[]';
ALTER TABLE templates ADD COLUMN instructions TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN metadata     TEXT NOT NULL DEFAULT '{}';

-- The claim centre and the shoppers' search read the active templates of
-- every shop, newest first, page by page (WHERE status = ? AND id < ?
-- ORDER BY id DESC), or of one category.
CREATE INDEX templates_status_id ON templates (status, id DESC);
CREATE INDEX templates_category_status_id ON templates (category, status, id DESC);
