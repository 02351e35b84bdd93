"""Review: a turn's changes as files and hunks, each hunk kept or put back.

- `hunks.py`: the diff of one file (difflib's opcodes, one hunk per change) and the text a
  rejection leaves — no I/O.
- `actions.py`: `review.show` (the turn's changes, from its start checkpoint to the files
  on disk now, with each file's content hash) and `review.apply` (rejected hunks put
  back in the working tree, a file at a time, a file changed since the review refused).
"""
