-- The sender's note to an envelope's recipients (issue 45: a template's use sets it), in their signing mail and page.
ALTER TABLE `envelopes` ADD `message` text;
