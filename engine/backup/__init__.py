"""Backups: an archive of a data dir (or one entity) taken while it serves, a restore
that checks every byte first (archive), and the record of each backup (records). Above
every layer: it copies what they all keep."""
