"""Club's business rules: lessons, enrollments and student profiles, free of I/O."""
