package eventhttp

import (
	"fmt"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers of google.events.cloud.firestore.v1.DocumentEventData, whose messages share
// firestorepb's wire format.
const documentEventValueField = 1

const (
	documentEventOldValueField   = 2
	documentEventUpdateMaskField = 3
)

// WrittenDocumentUpdateTime reads the written document's update time from a document.written
// event's DocumentEventData; ok is false for a delete.
func WrittenDocumentUpdateTime(data []byte) (updated time.Time, ok bool, err error) {
	doc, err := WrittenDocument(data)
	if err != nil || doc == nil {
		return time.Time{}, false, err
	}
	return doc.GetUpdateTime().AsTime(), doc.GetUpdateTime() != nil, nil
}

// WrittenDocument reads the document after the write; nil for a delete.
func WrittenDocument(data []byte) (*firestorepb.Document, error) {
	value, _, err := Documents(data)
	return value, err
}

// Documents reads the documents after and before the write; nil when absent.
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

// DocumentEventData encodes a document.written event's data as Eventarc does; updateMask
// lists an update's changed paths.
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
