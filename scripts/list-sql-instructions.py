#!/usr/bin/env python3
"""SQLite's instructions (callgrind, inside sqlite3_step) for every page of a user's 10,000 of 20,000 projects,
the resource list's narrowed SQL (IdentityService.listQuery's shape for research-crawler's `view`: `owner is me or
me is a member`) next to a plain SELECT of the same ids, without and with v21's covering index (issue 41).

    scripts/list-sql-instructions.py            # builds the database in a temporary folder, runs valgrind 6 times

Python's sqlite3 over the system SQLite (the library GRDB links); the schema is the tables' list columns and
indexes as of v21. Instruction counts, not wall time: the 2-core machine is shared."""
import json, os, re, shutil, sqlite3, subprocess, sys, tempfile, uuid

def build(path):
    db = sqlite3.connect(path)
    db.executescript('''
    CREATE TABLE user(id TEXT PRIMARY KEY);
    CREATE TABLE resource (id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL, ownerId TEXT NOT NULL REFERENCES user(id), createdAt DATETIME NOT NULL);
    CREATE INDEX resource_ownerId ON resource(ownerId);
    CREATE TABLE membership (resourceId TEXT NOT NULL REFERENCES resource(id) ON DELETE CASCADE, userId TEXT NOT NULL, role TEXT NOT NULL, joinedAt DATETIME NOT NULL, PRIMARY KEY (resourceId, userId));
    CREATE INDEX membership_userId_resourceId ON membership(userId, resourceId, role);
    CREATE INDEX resource_ownerId_id ON resource(ownerId, id);
    ''')
    me, other = 'me-%s' % uuid.uuid4(), 'other-%s' % uuid.uuid4()
    db.executemany('INSERT INTO user VALUES (?)', [(me,), (other,)])
    for i in range(20000):
        rid = 'p%06d-%s' % (i, uuid.uuid4())
        db.execute('INSERT INTO resource VALUES (?,?,?,?,?)', (rid, 'project', 'P', other, 0))
        db.execute('INSERT INTO membership VALUES (?,?,?,?)', (rid, other, 'owner', 0))
        if i % 2 == 0:
            db.execute('INSERT INTO membership VALUES (?,?,?,?)', (rid, me, 'editor', 0))
    db.commit()
    return me

def query(after):
    a1 = ' AND "listed"."resourceId" > ? AND "resource"."id" > ?' if after else ''
    a2 = ' AND "resource"."id" > ?' if after else ''
    plan1 = '("resource"."ownerId" = ? OR "listed"."role" IS NOT NULL)'
    plan2 = ('("resource"."ownerId" = ? OR (SELECT "m"."role" FROM "membership" "m" WHERE "m"."resourceId" = "resource"."id"'
             ' AND "m"."userId" = ?) IS NOT NULL)')
    return ('SELECT "id" FROM (SELECT "resource"."id" FROM "membership" AS "listed" JOIN "resource" ON "resource"."id" = "listed"."resourceId"'
            ' WHERE "listed"."userId" = ?' + a1 + ' AND "resource"."type" = ? AND ' + plan1 + ' ORDER BY "listed"."resourceId" LIMIT ?) AS "arm0"'
            ' UNION SELECT "id" FROM (SELECT "resource"."id" FROM "resource" WHERE "resource"."ownerId" = ?' + a2 +
            ' AND "resource"."type" = ? AND ' + plan2 + ' ORDER BY "resource"."id" LIMIT ?) AS "arm1" ORDER BY "id" LIMIT ?')

def run(path, me, what):
    db = sqlite3.connect(path)
    if what == 'plain':
        return [r[0] for r in db.execute('SELECT resourceId FROM membership WHERE userId = ? ORDER BY resourceId', [me])]
    limit, ids, after = int(what), [], None
    while True:
        if after:
            b = [me, after, after, 'project', me, limit + 1, me, after, 'project', me, me, limit + 1, limit + 1]
        else:
            b = [me, 'project', me, limit + 1, me, 'project', me, me, limit + 1, limit + 1]
        rows = [r[0] for r in db.execute(query(after), b)]
        ids += rows[:limit]
        if len(rows) <= limit:
            return ids
        after = rows[limit - 1]

if __name__ == '__main__':
    if len(sys.argv) == 4:  # the measured child: path, me, what
        print(len(run(*sys.argv[1:])))
        sys.exit(0)
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, 'lists.sqlite')
        me = build(path)
        assert run(path, me, '1000') == run(path, me, 'plain') and len(run(path, me, '100')) == 10000
        for variant in ('without', 'with'):
            db = sqlite3.connect(path, isolation_level=None)
            db.execute('DROP INDEX IF EXISTS resource_id_type_ownerId')
            if variant == 'with':
                db.execute('CREATE INDEX resource_id_type_ownerId ON resource(id, type, ownerId)')
            db.close()
            counts = {}
            for what in ('plain', '1000', '100'):
                out = subprocess.run(['valgrind', '--tool=callgrind', '--toggle-collect=sqlite3_step',
                                      '--callgrind-out-file=' + os.path.join(folder, 'cg.out'), sys.executable, __file__, path, me, what],
                                     capture_output=True, text=True, check=True)
                counts[what] = int(re.search(r'Collected : (\d+)', out.stderr).group(1))
            print('%s v21 index: plain SELECT %s, every page at limit 1000 %s (%.1fx), at limit 100 %s (%.1fx)' % (
                variant, f"{counts['plain']:,}", f"{counts['1000']:,}", counts['1000'] / counts['plain'],
                f"{counts['100']:,}", counts['100'] / counts['plain']))
    finally:
        shutil.rmtree(folder)
