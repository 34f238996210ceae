package mysql

import "github.com/quanhq/quan"

// InsertRows is how many rows one of the store's multi-row INSERTs of
// coupons carries.
const InsertRows = batchRows

// AppendCouponInsert appends to b a multi-row INSERT into table (coupons,
// or a table like it) of one coupon per user, with proto's receive
// sequence and other columns but its user. It is the statement the store issues a chunk's coupons with when
// the server refuses LOAD DATA (insertCoupons), built by the same code, for
// baselines that must write what the store writes (mysqltest); at most
// InsertRows users make a statement of the store's size. It fails if
// proto's status or source is not a word the store writes literally.
func AppendCouponInsert(b []byte, table string, proto *quan.Coupon, users []int64) ([]byte, error) {
	tail, err := couponTail(proto, false)
	if err != nil {
		return b, err
	}
	rows := make([]userSeq, len(users))
	for i, u := range users {
		rows[i] = userSeq{u, proto.Seq}
	}
	return appendCouponInsert(b, table, rows, tail), nil
}
