"""Roster exports: CSV files on disk, students' names, the age limit of heavy work."""
