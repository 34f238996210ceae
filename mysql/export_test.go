package mysql

// RefuseLoad makes db write coupons as a server with local_infile=OFF
// has it do, by INSERT, without changing the server.
func RefuseLoad(db *DB) { db.noLoad.Store(true) }
