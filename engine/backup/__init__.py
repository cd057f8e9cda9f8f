"""Backups: an archive of a data dir (or one entity) taken while it serves (archiving), a
restore that checks every byte first (restoring), what both know of an archive (archive);
one entity as plain files (exporting) taken into a data dir (importing), what both know of
an export (portable); the record of each backup (records); and what belongs to one entity
(scope). Above every layer: it copies what they all keep."""
