package eventhttp

import (
	"fmt"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// documentEventValueField is the field number of value, the document after the write, in
// google.events.cloud.firestore.v1.DocumentEventData. Its Document message has the wire format of
// google.firestore.v1.Document, so firestorepb decodes it; the google-cloudevents-go module that
// defines DocumentEventData itself is not needed for one field.
const documentEventValueField = 1

// documentEventOldValueField and documentEventUpdateMaskField are DocumentEventData's old_value (the
// document before the write, a Document) and update_mask (a DocumentMask, the wire format of
// google.firestore.v1.DocumentMask).
const (
	documentEventOldValueField   = 2
	documentEventUpdateMaskField = 3
)

// WrittenDocumentUpdateTime reads the update time of the written document from the protobuf
// DocumentEventData of a document.written event. ok is false when the event carries no document
// after the write (a delete).
func WrittenDocumentUpdateTime(data []byte) (updated time.Time, ok bool, err error) {
	doc, err := WrittenDocument(data)
	if err != nil || doc == nil {
		return time.Time{}, false, err
	}
	return doc.GetUpdateTime().AsTime(), doc.GetUpdateTime() != nil, nil
}

// WrittenDocument reads the document after the write from the protobuf DocumentEventData of a
// document.written event; nil when there is none (a delete).
func WrittenDocument(data []byte) (*firestorepb.Document, error) {
	value, _, err := Documents(data)
	return value, err
}

// Documents reads the documents after (value) and before (oldValue) the write from the protobuf
// DocumentEventData of a document.written event; nil when there is none (a delete, a create).
func Documents(data []byte) (value, oldValue *firestorepb.Document, err error) {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, nil, fmt.Errorf("decode DocumentEventData: %w", protowire.ParseError(n))
		}
		data = data[n:]
		if (num != documentEventValueField && num != documentEventOldValueField) || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, data); n < 0 {
				return nil, nil, fmt.Errorf("decode DocumentEventData: %w", protowire.ParseError(n))
			}
			data = data[n:]
			continue
		}
		b, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return nil, nil, fmt.Errorf("decode DocumentEventData field %d: %w", num, protowire.ParseError(n))
		}
		data = data[n:]
		var doc firestorepb.Document
		if err := proto.Unmarshal(b, &doc); err != nil {
			return nil, nil, fmt.Errorf("decode DocumentEventData field %d: %w", num, err)
		}
		if num == documentEventValueField {
			value = &doc
		} else {
			oldValue = &doc
		}
	}
	return value, oldValue, nil
}

// DocumentEventData encodes the protobuf DocumentEventData of a document.written event, as Eventarc
// sends it: value is the document after the write (nil for a delete), oldValue the document before
// it (nil for a create), updateMask the paths of the fields an update changed (nil otherwise).
func DocumentEventData(value, oldValue *firestorepb.Document, updateMask []string) ([]byte, error) {
	var b []byte
	for _, f := range []struct {
		num protowire.Number
		doc *firestorepb.Document
	}{{documentEventValueField, value}, {documentEventOldValueField, oldValue}} {
		if f.doc == nil {
			continue
		}
		enc, err := proto.Marshal(f.doc)
		if err != nil {
			return nil, fmt.Errorf("encode DocumentEventData: %w", err)
		}
		b = protowire.AppendTag(b, f.num, protowire.BytesType)
		b = protowire.AppendBytes(b, enc)
	}
	if len(updateMask) > 0 {
		mask, err := proto.Marshal(&firestorepb.DocumentMask{FieldPaths: updateMask})
		if err != nil {
			return nil, fmt.Errorf("encode DocumentEventData: %w", err)
		}
		b = protowire.AppendTag(b, documentEventUpdateMaskField, protowire.BytesType)
		b = protowire.AppendBytes(b, mask)
	}
	return b, nil
}
