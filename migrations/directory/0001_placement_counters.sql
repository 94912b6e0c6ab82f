-- Placement (issue 24): shard_placements counts the organizations on each shard, moved by the directory itself
-- whenever an organization is placed, moved or removed, so a new organization goes to the least full shard without a
-- scan and no code path can forget the count.
CREATE TRIGGER `organization_shards_placed` AFTER INSERT ON `organization_shards` BEGIN
  INSERT INTO `shard_placements` (`shard`, `organizations`) VALUES (NEW.`shard`, 1) ON CONFLICT(`shard`) DO UPDATE SET `organizations` = `organizations` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `organization_shards_moved` AFTER UPDATE OF `shard` ON `organization_shards` WHEN OLD.`shard` <> NEW.`shard` BEGIN
  UPDATE `shard_placements` SET `organizations` = `organizations` - 1 WHERE `shard` = OLD.`shard`;
  INSERT INTO `shard_placements` (`shard`, `organizations`) VALUES (NEW.`shard`, 1) ON CONFLICT(`shard`) DO UPDATE SET `organizations` = `organizations` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `organization_shards_removed` AFTER DELETE ON `organization_shards` BEGIN
  UPDATE `shard_placements` SET `organizations` = `organizations` - 1 WHERE `shard` = OLD.`shard`;
END;
