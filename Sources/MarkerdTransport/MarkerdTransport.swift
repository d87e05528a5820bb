private import CNNG
func _probe() -> Int32 { var s = nng_socket(); return nng_rep0_open(&s) }
