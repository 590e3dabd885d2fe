"""Development scripts of the course: sync, exercises, progress, html."""
