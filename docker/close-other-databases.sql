-- Run once, when the postgres container creates its cluster: the cluster is querygate's alone, so the two
-- databases initdb made are closed to PUBLIC. Otherwise the reader role, like every role, could connect to them
-- and create temporary tables there (`querygate doctor` fails a reader that can).
REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC;
REVOKE CONNECT, TEMPORARY ON DATABASE template1 FROM PUBLIC;
