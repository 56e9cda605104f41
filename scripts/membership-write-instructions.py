#!/usr/bin/env python3
"""SQLite's instructions (callgrind, inside sqlite3_step) per membership insert, at v21 and with v22's triggers and index
(issue 41: a membership row carries its resource's type and owner), the copies left NULL (the triggers fill them, as for
a joined member) or named right (a new space's owner row: the triggers only check).

    scripts/membership-write-instructions.py    # 2,000 inserts per run, 4 valgrind runs

v22's SQL is read from Sources/Identity/AppDatabase.swift, so the script measures the migration as written."""
import os, re, sqlite3, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = open(os.path.join(HERE, '..', 'Sources', 'Identity', 'AppDatabase.swift')).read()
V22 = SOURCE[SOURCE.index('("v22-membership-resource-facts", """') + len('("v22-membership-resource-facts", """'):]
V22 = V22[:V22.index('"""')]

def build(path, v22):
    db = sqlite3.connect(path)
    db.executescript('''CREATE TABLE user(id TEXT PRIMARY KEY);
    CREATE TABLE resource (id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL, ownerId TEXT NOT NULL REFERENCES user(id), createdAt DATETIME NOT NULL);
    CREATE INDEX resource_ownerId ON resource(ownerId);
    CREATE TABLE membership (resourceId TEXT NOT NULL REFERENCES resource(id) ON DELETE CASCADE, userId TEXT NOT NULL REFERENCES user(id),
        role TEXT NOT NULL, joinedAt DATETIME NOT NULL, PRIMARY KEY (resourceId, userId));
    CREATE INDEX membership_userId_resourceId ON membership(userId, resourceId, role);
    CREATE INDEX resource_ownerId_id ON resource(ownerId, id);
    CREATE INDEX resource_id_type_ownerId ON resource(id, type, ownerId);''')
    db.executemany('INSERT INTO user VALUES (?)', [('u%d' % i,) for i in range(100)])
    db.executemany('INSERT INTO resource VALUES (?,?,?,?,0)', [('r%05d' % i, 'project', 'P', 'u0') for i in range(2000)])
    if v22:
        db.executescript(V22)
    db.commit()

def work(path, given):
    db = sqlite3.connect(path)
    db.execute('PRAGMA foreign_keys = ON')
    for i in range(2000):
        if given == 'given':
            db.execute('INSERT INTO membership (resourceId, userId, role, joinedAt, resourceType, resourceOwnerId) VALUES (?,?,?,0,?,?)',
                       ('r%05d' % i, 'u%d' % (1 + i % 99), 'editor', 'project', 'u0'))
        else:
            db.execute('INSERT INTO membership (resourceId, userId, role, joinedAt) VALUES (?,?,?,0)', ('r%05d' % i, 'u%d' % (1 + i % 99), 'editor'))
    db.commit()

if __name__ == '__main__':
    if len(sys.argv) == 3:  # the measured child: path, null|given
        work(*sys.argv[1:])
        sys.exit(0)
    folder = tempfile.mkdtemp()
    for name, v22, given in (('v21', False, 'null'), ('v22, copies NULL', True, 'null'), ('v22, copies named', True, 'given')):
        path = os.path.join(folder, '%d%s.sqlite' % (v22, given))
        build(path, v22)
        out = subprocess.run(['valgrind', '--tool=callgrind', '--toggle-collect=sqlite3_step', '--callgrind-out-file=' + os.path.join(folder, 'cg'),
                              sys.executable, __file__, path, given], capture_output=True, text=True, check=True)
        n = int(re.search(r'Collected : (\d+)', out.stderr).group(1))
        wrong = sqlite3.connect(path).execute(
            "SELECT COUNT(*) FROM membership WHERE resourceType IS NOT 'project' OR resourceOwnerId IS NOT 'u0'" if v22 else 'SELECT 0').fetchone()[0]
        print('%s: %s instructions per membership insert (%d rows with wrong copies)' % (name, f'{n // 2000:,}', wrong))
