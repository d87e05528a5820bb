private import CMarkerdProto
private import CProtobufC

func _probe() -> Int {
    var r = Markerd__V1__Request()
    markerd__v1__request__init(&r)
    return Int(markerd__v1__request__get_packed_size(&r))
}
