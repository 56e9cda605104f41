#!/usr/bin/env python3
"""SQLite's instructions (callgrind, inside sqlite3_step) for every page of a user's 10,000 of 20,000 projects,
the resource list's narrowed SQL (IdentityService.listQuery's shape for research-crawler's `view`: `owner is me or
me is a member`) next to a plain SELECT of the same ids: v20's join, v21's covering index, and v22's membership rows
that carry their resource's type and owner (issue 41).

    scripts/list-sql-instructions.py            # builds the database in a temporary folder, runs valgrind 9 times

Python's sqlite3 over the system SQLite (the library GRDB links); the schema is the tables' list columns and
indexes as of v22 (v22's columns filled as its backfill fills them). Instruction counts, not wall time: the 2-core machine is shared."""
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

def query(after, variant):
    if variant == 'v22':
        a1 = ' AND "listed"."resourceId" > ?' if after else ''
        a2 = ' AND "resource"."id" > ?' if after else ''
        plan1 = '("listed"."resourceOwnerId" = ? OR "listed"."role" IS NOT NULL)'
        plan2 = ('("resource"."ownerId" = ? OR (SELECT "m"."role" FROM "membership" "m" WHERE "m"."resourceId" = "resource"."id"'
                 ' AND "m"."userId" = ?) IS NOT NULL)')
        # SQLite's form: the arms bare in the union, merged in index order as far as the outer LIMIT reads them.
        return ('SELECT "listed"."resourceId" AS "id" FROM "membership" AS "listed"'
                ' WHERE "listed"."userId" = ? AND "listed"."resourceType" = ?' + a1 + ' AND ' + plan1 +
                ' UNION SELECT "resource"."id" FROM "resource" WHERE "resource"."ownerId" = ?' + a2 + ' AND "resource"."type" = ?'
                ' AND ' + plan2 + ' ORDER BY "id" LIMIT ?')
    a1 = ' AND "listed"."resourceId" > ? AND "resource"."id" > ?' if after else ''
    a2 = ' AND "resource"."id" > ?' if after else ''
    plan1 = '("resource"."ownerId" = ? OR "listed"."role" IS NOT NULL)'
    plan2 = ('("resource"."ownerId" = ? OR (SELECT "m"."role" FROM "membership" "m" WHERE "m"."resourceId" = "resource"."id"'
             ' AND "m"."userId" = ?) IS NOT NULL)')
    return ('SELECT "id" FROM (SELECT "resource"."id" FROM "membership" AS "listed" JOIN "resource" ON "resource"."id" = "listed"."resourceId"'
            ' WHERE "listed"."userId" = ?' + a1 + ' AND "resource"."type" = ? AND ' + plan1 + ' ORDER BY "listed"."resourceId" LIMIT ?) AS "arm0"'
            ' UNION SELECT "id" FROM (SELECT "resource"."id" FROM "resource" WHERE "resource"."ownerId" = ?' + a2 +
            ' AND "resource"."type" = ? AND ' + plan2 + ' ORDER BY "resource"."id" LIMIT ?) AS "arm1" ORDER BY "id" LIMIT ?')

def run(path, me, what, variant='v21'):
    db = sqlite3.connect(path)
    if what == 'plain':
        return [r[0] for r in db.execute('SELECT resourceId FROM membership WHERE userId = ? ORDER BY resourceId', [me])]
    limit, ids, after = int(what), [], None
    while True:
        if variant == 'v22':
            b = ([me, 'project'] + ([after] if after else []) + [me, me] + ([after] if after else [])
                 + ['project', me, me, limit + 1])
        elif after:
            b = [me, after, after, 'project', me, limit + 1, me, after, 'project', me, me, limit + 1, limit + 1]
        else:
            b = [me, 'project', me, limit + 1, me, 'project', me, me, limit + 1, limit + 1]
        rows = [r[0] for r in db.execute(query(after, variant), b)]
        ids += rows[:limit]
        if len(rows) <= limit:
            return ids
        after = rows[limit - 1]

if __name__ == '__main__':
    if len(sys.argv) == 5:  # the measured child: path, me, what, variant
        print(len(run(*sys.argv[1:])))
        sys.exit(0)
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, 'lists.sqlite')
        me = build(path)
        for variant in ('v20', 'v21', 'v22'):
            db = sqlite3.connect(path, isolation_level=None)
            db.execute('DROP INDEX IF EXISTS resource_id_type_ownerId')
            if variant != 'v20':
                db.execute('CREATE INDEX resource_id_type_ownerId ON resource(id, type, ownerId)')
            if variant == 'v22':  # v22's columns, its backfill and its index (the triggers keep them; nothing writes here)
                db.executescript('''
                ALTER TABLE membership ADD COLUMN resourceType TEXT;
                ALTER TABLE membership ADD COLUMN resourceOwnerId TEXT;
                UPDATE membership SET resourceType = (SELECT type FROM resource WHERE resource.id = membership.resourceId),
                    resourceOwnerId = (SELECT ownerId FROM resource WHERE resource.id = membership.resourceId);
                CREATE INDEX membership_userId_resourceType ON membership(userId, resourceType, resourceId, role, resourceOwnerId);
                ''')
            db.close()
            plain = run(path, me, 'plain')
            assert run(path, me, '1000', variant) == plain and run(path, me, '100', variant) == plain and len(plain) == 10000
            counts = {}
            for what in ('plain', '1000', '100'):
                out = subprocess.run(['valgrind', '--tool=callgrind', '--toggle-collect=sqlite3_step',
                                      '--callgrind-out-file=' + os.path.join(folder, 'cg.out'), sys.executable, __file__, path, me, what, variant],
                                     capture_output=True, text=True, check=True)
                counts[what] = int(re.search(r'Collected : (\d+)', out.stderr).group(1))
            print('%s: plain SELECT %s, every page at limit 1000 %s (%.1fx), at limit 100 %s (%.1fx)' % (
                variant, f"{counts['plain']:,}", f"{counts['1000']:,}", counts['1000'] / counts['plain'],
                f"{counts['100']:,}", counts['100'] / counts['plain']))
    finally:
        shutil.rmtree(folder)
